"""Phone bots for the voice tests, on plain `websockets` (the library most Media Streams servers use):
each answers the carrier's Media Streams messages with known timings, so the tests can plant delays,
talk-over and silences and check that the carrier measures them."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection, serve

from simulator.voice.activity import rms_dbfs
from simulator.voice.mulaw import SAMPLE_RATE, decode, encode


def tone(seconds: float, hz: float = 440.0, level: float = 8000.0) -> np.ndarray:
    t = np.arange(round(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (level * np.sin(2 * np.pi * hz * t)).astype(np.int16)


@dataclass
class Reply:
    """What the bot says after the caller's n-th utterance: `audio` samples, `delay_s` after the last
    frame that carried sound."""

    audio: np.ndarray
    delay_s: float


@dataclass
class ScriptedPhoneBot:
    """Answers each caller utterance with the next reply. An utterance ends once `end_gap_s` of silent frames
    followed sound (the caller in these tests speaks without line noise). `yields`: on sound from the caller
    while its own audio plays, it sends `clear` (as pipecat does when interrupted). `greeting`: audio sent
    as soon as the call starts. `hang_up_after`: close the socket after that many replies have played."""

    replies: list[Reply]
    end_gap_s: float = 0.3
    floor_dbfs: float = -80.0
    yields: bool = False
    greeting: np.ndarray | None = None
    hang_up_after: int | None = None
    received: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    sent_at: list[tuple[float, float]] = field(default_factory=list)  # (last sound frame arrived, reply sent)
    url: str = ""

    async def __aenter__(self) -> ScriptedPhoneBot:
        self._server = await serve(self._handle, "127.0.0.1", 0)
        port = next(iter(self._server.sockets)).getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/media"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _say(self, ws: ServerConnection, sid: str, audio: np.ndarray, name: str) -> None:
        payload = base64.b64encode(encode(audio)).decode()
        await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": payload}}))
        await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": name}}))

    async def _handle(self, ws: ServerConnection) -> None:
        sid = ""
        last_sound: float | None = None
        index = 0
        playing_until = 0.0
        pending: asyncio.Task[None] | None = None

        async def answer(reply: Reply, heard: float, number: int) -> None:
            nonlocal playing_until
            await asyncio.sleep(max(0.0, heard + reply.delay_s - time.perf_counter()))
            self.sent_at.append((heard, time.perf_counter()))
            await self._say(ws, sid, reply.audio, f"reply-{number}")
            playing_until = time.perf_counter() + len(reply.audio) / SAMPLE_RATE
            if self.hang_up_after is not None and number + 1 >= self.hang_up_after:
                await asyncio.sleep(len(reply.audio) / SAMPLE_RATE + 0.2)
                await ws.close()

        async for text in ws:
            now = time.perf_counter()
            message = json.loads(text)
            self.received.append((now, message))
            event = message.get("event")
            if event == "start":
                sid = message["start"]["streamSid"]
                if self.greeting is not None:
                    await self._say(ws, sid, self.greeting, "greeting")
                    playing_until = now + len(self.greeting) / SAMPLE_RATE
                continue
            if event != "media":
                continue
            sound = rms_dbfs(decode(base64.b64decode(message["media"]["payload"]))) > self.floor_dbfs
            if sound:
                if self.yields and now < playing_until:
                    await ws.send(json.dumps({"event": "clear", "streamSid": sid}))
                    playing_until = now
                last_sound = now
            elif last_sound is not None and now - last_sound >= self.end_gap_s and index < len(self.replies):
                if pending is None or pending.done():
                    pending = asyncio.create_task(answer(self.replies[index], last_sound, index))
                    index += 1
                last_sound = None
        if pending is not None and not pending.done():
            pending.cancel()
