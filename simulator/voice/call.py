"""One phone call to the bot, as the carrier makes it: dial the bot's WebSocket, stream the caller's audio
every 20 ms for the whole call (speech when the caller speaks, line noise otherwise), play the bot's audio
back at real-time speed, echo its marks, and keep both sides with their times.

Times are seconds on the call's clock (0 = the WebSocket opened). A media frame carries the 20 ms of audio
that ended when it was sent, as a carrier sends what it has just captured: so the caller's speech ends
when its last frame is sent, and a bot that answers D seconds after that frame arrives is heard D seconds
after the caller stopped.
"""

from __future__ import annotations

__all__ = ["Call", "Spoken"]

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import orjson
from numpy.typing import NDArray

from simulator.errors import UserError
from simulator.eventloop import within
from simulator.voice import wire
from simulator.voice.mulaw import FRAME_BYTES, FRAME_S, SAMPLE_RATE, encode
from simulator.voice.playback import Playback
from simulator.voice.speech import Utterance

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection


@dataclass(frozen=True)
class Spoken:
    """When the caller said an utterance on the call's clock, and its sentences' (start, end)."""

    start: float
    end: float
    spans: list[tuple[float, float]]


@dataclass
class _Speaking:
    samples: NDArray[np.int16]
    done: asyncio.Future[Spoken]
    position: int = 0
    spans: list[tuple[float, float]] = field(default_factory=list)


class Call:
    """A call in progress; `dial` opens it, `speak` says an utterance, `hang_up` ends it."""

    def __init__(
        self,
        url: str,
        ids: wire.CallIds,
        parameters: dict[str, str],
        *,
        noise_dbfs: float | None,
        seed: int,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self.url = url
        self.ids = ids
        self.parameters = parameters
        self.playback = Playback()
        self.caller_frames: list[tuple[float, NDArray[np.int16]]] = []  # (sent at, samples)
        self.marks_echoed: list[tuple[float, str]] = []
        self.marks_received: list[tuple[float, str]] = []
        self.protocol_error: str | None = None
        self.ignored_events = 0
        self.hung_up_at: float | None = None  # when the bot closed the call
        # How the bot closed it: the WebSocket close code it sent (1006: none, the connection dropped) and
        # its reason; None while the call is open or when the caller hung up.
        self.close_code: int | None = None
        self.close_reason = ""
        self._noise_scale = None if noise_dbfs is None else 32768.0 * 10 ** (noise_dbfs / 20)
        self._rng = np.random.default_rng(seed)
        self._connect_timeout_s = connect_timeout_s
        self._speaking: _Speaking | None = None
        self._echo: list[str] = []  # marks to echo on the next tick (after a clear)
        self._sequence = 0
        self._t0 = 0.0
        self._ws: ClientConnection | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._receiver: asyncio.Task[None] | None = None
        self._closing = False

    def now(self) -> float:
        return time.perf_counter() - self._t0

    @property
    def open(self) -> bool:
        return self._ws is not None and self.hung_up_at is None and not self._closing

    def _next(self) -> int:
        self._sequence += 1
        return self._sequence

    async def _send(self, message: dict[str, object]) -> None:
        assert self._ws is not None
        await self._ws.send(orjson.dumps(message).decode())

    async def dial(self) -> None:
        """Open the WebSocket, send `connected` and `start`, and start the media clock."""
        try:
            from websockets.asyncio.client import connect
        except ImportError:
            raise UserError(
                'the voice channel needs the websockets package: pip install -e ".[voice]"'
            ) from None

        self._ws = await within(
            connect(self.url, max_size=2**24, open_timeout=self._connect_timeout_s, compression=None),
            self._connect_timeout_s,
        )
        self._t0 = time.perf_counter()
        await self._send(wire.connected())
        await self._send(wire.start(self.ids, self._next(), self.parameters))
        self._receiver = asyncio.create_task(self._receive())
        self._tasks = [asyncio.create_task(self._media_clock()), self._receiver]

    async def speak(self, utterance: Utterance) -> Spoken:
        """Say `utterance` from the next frame on; returns once its last frame has been sent."""
        if self._speaking is not None:
            raise RuntimeError("the caller is already speaking")
        done: asyncio.Future[Spoken] = asyncio.get_running_loop().create_future()
        self._speaking = _Speaking(utterance.samples, done, spans=list(utterance.spans))
        try:
            return await done
        finally:
            self._speaking = None

    def _frame(self, now: float) -> NDArray[np.int16]:
        """The next 20 ms the caller's line carries: the utterance being said, else line noise."""
        speaking = self._speaking
        if speaking is not None and not speaking.done.done():
            piece = speaking.samples[speaking.position : speaking.position + FRAME_BYTES]
            speaking.position += FRAME_BYTES
            if len(piece) == FRAME_BYTES:
                return piece
            return np.concatenate([piece, self._noise(FRAME_BYTES - len(piece))])
        return self._noise(FRAME_BYTES)

    def _noise(self, count: int) -> NDArray[np.int16]:
        if self._noise_scale is None:
            return np.zeros(count, dtype=np.int16)
        return np.clip(self._rng.normal(0.0, self._noise_scale, count), -32768, 32767).astype(np.int16)

    async def _media_clock(self) -> None:
        """One media message every 20 ms on an absolute schedule (a late tick never shifts the next)."""
        chunk = 0
        try:
            while not self._closing:
                delay = self._t0 + (chunk + 1) * FRAME_S - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                now = self.now()
                samples = self._frame(now)
                chunk += 1
                await self._send(wire.media(self.ids, self._next(), chunk, (chunk - 1) * 20, encode(samples)))
                self.caller_frames.append((now, samples))
                self._finish_utterance(now)
                for name in [*self._echo, *self.playback.due_marks(now)]:
                    await self._send(wire.mark(self.ids, self._next(), name))
                    self.marks_echoed.append((now, name))
                self._echo = []
        except Exception:  # the bot hung up (ConnectionClosed) or the socket broke: the receiver records it
            self._fail_speaking()

    def _finish_utterance(self, now: float) -> None:
        speaking = self._speaking
        if speaking is None or speaking.done.done() or speaking.position < len(speaking.samples):
            return
        # Anchored at its last frame, sent now: a late first frame (a busy machine) never shortens it.
        start = now - FRAME_S * -(-len(speaking.samples) // FRAME_BYTES)
        spans = [(start + a, start + b) for a, b in speaking.spans]
        speaking.done.set_result(Spoken(start, now, spans))

    def _fail_speaking(self) -> None:
        speaking = self._speaking
        if speaking is not None and not speaking.done.done():
            speaking.done.set_exception(ConnectionError("the call ended while the caller was speaking"))

    async def _receive(self) -> None:
        from websockets.exceptions import ConnectionClosed

        assert self._ws is not None
        try:
            async for text in self._ws:
                now = self.now()
                try:
                    message = wire.parse_bot_message(text, self.ids.stream_sid)
                except wire.WireError as exc:
                    self.protocol_error = self.protocol_error or str(exc)
                    continue
                if message is None:
                    self.ignored_events += 1
                elif message.event == "media":
                    self.playback.add(now, message.audio)
                elif message.event == "mark":
                    self.playback.mark(now, message.name)
                    self.marks_received.append((now, message.name))
                else:
                    self._echo += self.playback.clear(now)
        except ConnectionClosed:
            pass  # a close with an error code, or none (1006): the code is read below, as for a normal one
        finally:
            if not self._closing:
                self.hung_up_at = self.now()
                self.close_code = self._ws.close_code
                self.close_reason = self._ws.close_reason or ""
                self._fail_speaking()

    async def closed_by_bot(self) -> None:
        """Wait (a moment at most) until the receiver has recorded how the bot closed the call: sending
        may fail on the closed socket a little before the receiver sees the close."""
        receiver = self._receiver
        if receiver is not None and not receiver.done():
            with contextlib.suppress(TimeoutError, Exception):
                await within(asyncio.shield(receiver), 1.0)

    async def hang_up(self) -> None:
        """Send `stop` and close the WebSocket (the caller hangs up); safe to call twice."""
        if self._closing:
            return
        self._closing = True
        ws = self._ws
        if ws is not None and self.hung_up_at is None:
            with contextlib.suppress(Exception):
                await self._send(wire.stop(self.ids, self._next()))
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        if ws is not None:
            with contextlib.suppress(Exception):
                await within(ws.close(), 2.0)

    def caller_audio(self, since: float, until: float) -> NDArray[np.int16]:
        """What the caller's line carried in [since, until), as one 8 kHz track."""
        out = np.zeros(max(0, round((until - since) * SAMPLE_RATE)), dtype=np.int16)
        for sent, samples in self.caller_frames:
            first = round((sent - FRAME_S - since) * SAMPLE_RATE)
            if first >= len(out) or first + len(samples) <= 0:
                continue
            piece = samples[max(0, -first) :]
            first = max(0, first)
            piece = piece[: len(out) - first]
            out[first : first + len(piece)] = piece
        return out
