"""The `voice` bot kind: the engine plays the telephony carrier to a phone bot, and the simulated patient
speaks on the line (docs/voice.md).

Each conversation is one call. Per user message the caller says the words (speech.py) on the call
(call.py) and listens until the bot has been quiet for `quiet_s` after speaking (or, for a caller who
barges in, until the bot has spoken `barge_in_after_s`, when the caller starts talking over it). The bot's
speech in that window becomes the bot turn's audio parts, each transcribed locally; the caller's speech
replaces the user turn's text with an audio part. Both sides' audio is kept in the run folder. The bot
hanging up (a normal close, 1000) is the bot closing the conversation; a close with an error code (1011, or
none: 1006), a started bot whose process has exited, a call that goes dead (no speech within `timeout_s`)
or a message the protocol does not allow is a bot error, never a pass or a fail.
"""

from __future__ import annotations

__all__ = ["VoiceBotFactory", "voice_bot_factory"]

import asyncio
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from simulator.bots.base import BotError, BotReply
from simulator.bots.bounded_read import read_bounded
from simulator.bots.service import BotProcess, StartOnce, death_of, fill, placeholder_values
from simulator.config.scenario import Scenario
from simulator.config.yamlfile import YAMLProblem, read_text_file
from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.record.parts import AudioPart, Part, PickPart
from simulator.record.redact import redact
from simulator.tls import shared_ssl_context
from simulator.voice.activity import merge
from simulator.voice.audio_files import AudioFiles, conversation_folder
from simulator.voice.call import Call, Spoken
from simulator.voice.config import CallerVoice, VoiceBotConfig
from simulator.voice.mulaw import SAMPLE_RATE
from simulator.voice.speech import Utterance, say
from simulator.voice.tools import espeak_path
from simulator.voice.transcribe import Transcriber, punctuate
from simulator.voice.wire import CallIds

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub

_TICK_S = 0.02
_MERGE_GAP_S = 0.8  # the bot's pauses shorter than this (between words, sentences) stay in one stretch
_PAD_S = 0.25  # the transcriber hears a little before and after a stretch (soft first and last sounds)
_MAX_REPLY_S = 120.0  # a bot still talking this long after the caller finished: the turn is cut there


# A hang-up: a normal closure, or a close frame without a code (what some libraries' close() sends).
_CLEAN_CLOSES = (1000, 1005)
_CLOSE_WORDS = {
    1001: "going away: the bot's server is shutting down",
    1002: "protocol error",
    1003: "unsupported data",
    1006: "no close frame: the connection dropped or was reset, as when the bot's process dies",
    1007: "invalid payload",
    1008: "policy violation",
    1009: "message too big",
    1011: "internal error: the bot's server failed while handling the call",
}


def _abnormal_close(call: Call, process: BotProcess | None) -> str:
    """Why a call the bot closed with an error code (or none) is a bot error, and what to do."""
    code = call.close_code
    words = _CLOSE_WORDS.get(code or 0, "an error code")
    reason = f", reason {redact(call.close_reason)!r}" if call.close_reason else ""
    text = (
        f"the bot ended the call {call.hung_up_at or 0.0:.1f} s in with WebSocket close code {code} ({words}"
        f"{reason}): a crash, not a hang-up, so the call is a bot error, neither judged nor counted. A bot "
        "hangs up by closing with code 1000; fix what failed (the bot's log says why) and run again"
    )
    tail = process.recent_log() if process is not None else None
    return text + (f"\n{tail}" if tail else "")


def caller_for(config: VoiceBotConfig, scenario: Scenario | None) -> CallerVoice:
    """The caller a scenario speaks as: the suite's `caller`, changed by the first `callers` entry its tags
    or factor levels name."""
    if scenario is None:
        return config.caller
    names = [*scenario.tags, *scenario.factors.values()]
    for name, changes in config.callers.items():
        if name in names:
            return config.caller.with_changes(changes)
    return config.caller


def _phrases(config: VoiceBotConfig, base_dir: Path) -> list[str] | None:
    name = config.transcriber.phrases
    if name is None:
        return None
    path = Path(name) if Path(name).is_absolute() else base_dir / name
    try:
        text = read_text_file(path)
    except YAMLProblem as exc:
        raise UserError(f"bot.transcriber.phrases: {exc.problem}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


class VoiceBotFactory:
    """One transcriber, one HTTP client and (with bot.start) one bot process for the whole run."""

    wants_scenario = True  # the engine gives `open` the scenario (the caller speaks as its persona)

    def __init__(
        self, config: VoiceBotConfig, base_dir: Path, *, record_raw: bool = True, suite: Suite | None = None
    ) -> None:
        self.config = config
        self.record_raw = record_raw
        values = placeholder_values(config.start is not None)
        self.url = fill(config.url, values, "bot.url")
        self.state_url = fill(config.state_url, values, "bot.state_url") if config.state_url else None
        self.phrases = _phrases(config, base_dir)
        self.process: BotProcess | None = None
        if config.start is not None:
            self.process = BotProcess(config.start, base_dir, values, self.url, suite=suite)
        self.client = httpx.AsyncClient(timeout=config.timeout_s, verify=shared_ssl_context())
        self.transcriber: Transcriber | None = None
        self.run_folder: Path | None = None
        self._once = StartOnce()

    async def start(self, log_dir: Path | None = None) -> None:
        """Check the speech tools, load the transcriber and start the bot (bot.start), once. `log_dir` is
        the run folder: the calls' audio is kept there."""
        if log_dir is not None and self.run_folder is None:
            self.run_folder = log_dir

        async def start_all() -> None:
            espeak_path()
            self.transcriber = Transcriber(self.phrases)
            if self.process is not None:
                await self.process.start(log_dir)

        await self._once.run(start_all)

    async def why(self, exc: BaseException) -> str:
        """A failed call said as it is, with the bot process's exit and log when it has died."""
        note = await death_of(self.process)
        if note:
            return note
        if isinstance(exc, OSError | TimeoutError):
            return f"could not connect to {redact(self.url)}: is the bot listening there? ({exc})"
        return f"{type(exc).__name__}: {exc}"

    async def open(self, conversation_id: str, scenario: Scenario | None = None) -> VoiceSession:
        try:
            await self.start()
        except UserError as exc:
            raise BotError("start", str(exc)) from exc
        files = None
        if self.run_folder is not None and self.config.keep_audio:
            files = AudioFiles(self.run_folder, conversation_folder(conversation_id))
        parts = conversation_id.split("/")
        seed = parts[-2] if len(parts) >= 3 else conversation_id  # the scenario#repeat key: same every run
        return VoiceSession(self, caller_for(self.config, scenario), seed, files)

    async def aclose(self) -> None:
        if self.process is not None:
            await self.process.stop()
        if self.transcriber is not None:
            self.transcriber.close()
        await self.client.aclose()


class VoiceSession:
    """One call: the simulated caller and the bot, turn by turn."""

    def __init__(
        self, factory: VoiceBotFactory, caller: CallerVoice, seed: str, files: AudioFiles | None
    ) -> None:
        self._factory = factory
        self._config = factory.config
        self.caller = caller
        self.seed = seed
        self.files = files
        self.ids = CallIds.new()
        self.call: Call | None = None
        self._reported_until = 0.0  # the bot's speech up to here is in earlier turns
        self._barging = False  # the last bot turn ended with the caller talking over it

    async def _dial(self) -> Call:
        if self.call is not None:
            return self.call
        parameters = {**self._config.parameters, "conversation": self.seed}
        call = Call(self._factory.url, self.ids, parameters, noise_dbfs=self.caller.noise_dbfs,
                    seed=random.Random(self.seed).getrandbits(32))  # fmt: skip
        try:
            await call.dial()
        except Exception as exc:  # OSError, timeouts, a refused WebSocket handshake
            await call.hang_up()
            raise BotError("connection", f"dialling the bot failed: {await self._factory.why(exc)}") from exc
        self.call = call
        return call

    def _check(self, call: Call) -> None:
        if call.protocol_error is not None:
            raise BotError("invalid_reply", f"Media Streams protocol: {call.protocol_error}")

    def _last_bot_speech(self, call: Call) -> float | None:
        spans = call.playback.voiced_spans(0.0, float("inf"))
        return spans[-1][1] if spans else None

    async def _wait_to_speak(self, call: Call, turn: int, rng: random.Random) -> None:
        """Let the bot greet on the first turn; answer `answer_delay_s` after the bot's last speech (or
        `long_silence_s`, sometimes); a caller who barged in speaks at once."""
        if self._barging:
            return
        if turn == 0 and self._config.greeting_s > 0:
            deadline = call.now() + self._config.greeting_s
            while call.open and call.now() < deadline and self._last_bot_speech(call) is None:
                await asyncio.sleep(_TICK_S)
            if self._last_bot_speech(call) is not None:
                await self._until_quiet(call, self._config.quiet_s)
        delay = self.caller.answer_delay_s
        if self.caller.long_silence and rng.random() < self.caller.long_silence:
            delay = self.caller.long_silence_s
        last = self._last_bot_speech(call)
        wait = (last if last is not None else call.now()) + delay - call.now()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _until_quiet(self, call: Call, quiet_s: float) -> None:
        while call.open:
            now = call.now()
            last = self._last_bot_speech(call)
            if not call.playback.voiced_spans(now, float("inf")) and (last is None or now - last >= quiet_s):
                return
            await asyncio.sleep(_TICK_S)

    async def send(self, text: str, turn: int, *, pick: PickPart | None = None) -> BotReply:
        call = await self._dial()
        self._check(call)
        rng = random.Random(f"{self.seed}:{turn}")
        await self._wait_to_speak(call, turn, rng)
        caller = self.caller
        utterance = await say(text, voice=caller.voice, rate_wpm=caller.rate_wpm, pause_s=caller.pause_s,
                              disfluency=caller.disfluency, noise_dbfs=caller.noise_dbfs,
                              seed=f"{self.seed}:{turn}")  # fmt: skip
        spoken: Spoken | None = None
        if call.open:
            try:
                spoken = await call.speak(utterance)
            except ConnectionError:
                spoken = None
        if spoken is None:  # the bot hung up (or crashed) before or while the caller spoke
            await self._bot_ended(call)
            return await self._reply(call, turn, utterance, None, "hangup", call.now())
        end, until = await self._collect(call, spoken, rng.random() < caller.barge_in)
        return await self._reply(call, turn, utterance, spoken, end, until)

    async def _bot_ended(self, call: Call) -> None:
        """The bot closed the call: a hang-up when it closed the WebSocket normally and its process
        (bot.start) still runs; else a bot error that says how it ended, never an end to judge."""
        await call.closed_by_bot()
        clean = call.close_code in _CLEAN_CLOSES
        process = self._factory.process
        died = await (death_of(process, grace_s=0) if clean else death_of(process))
        if died:
            raise BotError("connection", f"the call ended {call.now():.1f} s in because {died}")
        if not clean:
            raise BotError("connection", _abnormal_close(call, process))

    async def _collect(self, call: Call, spoken: Spoken, barge: bool) -> tuple[str, float]:
        """Listen until the bot's turn is over; return how it ended and when."""
        config = self._config
        while True:
            await asyncio.sleep(_TICK_S)
            now = call.now()
            self._check(call)
            spans = call.playback.voiced_spans(spoken.start, now)
            later = call.playback.voiced_spans(now, float("inf"))
            if call.hung_up_at is not None and not later:
                await self._bot_ended(call)
                return "hangup", now
            if barge:
                talked = sum(end - max(start, spoken.end) for start, end in spans if end > spoken.end)
                if talked >= self.caller.barge_in_after_s:
                    return "barge_in", now
            if spans and not later and now - spans[-1][1] >= config.quiet_s:
                return "quiet", now
            if not spans and now - spoken.end >= config.timeout_s:
                raise BotError(
                    "timeout",
                    f"the bot said nothing within {config.timeout_s:g} s of the caller's last word "
                    "(bot.timeout_s)",
                )
            if now - spoken.end >= _MAX_REPLY_S:
                return "too_long", now

    async def _reply(
        self, call: Call, turn: int, utterance: Utterance, spoken: Spoken | None, end: str, until: float
    ) -> BotReply:
        """The turn as parts: the caller's speech, the bot's stretches of speech (transcribed), the raw."""
        spans = call.playback.voiced_spans(self._reported_until, until)
        segments = merge(spans, _MERGE_GAP_S)
        self._reported_until = until
        self._barging = end == "barge_in"
        transcriber = self._factory.transcriber
        assert transcriber is not None  # loaded by the factory's start
        parts: list[Part] = []
        for number, segment in enumerate(segments):
            samples = call.playback.audio(segment.start, segment.end)
            heard = call.playback.audio(max(0.0, segment.start - _PAD_S), segment.end + _PAD_S)
            words = punctuate(await transcriber.transcribe(heard), transcriber.marks)
            name = f"{turn:02d}-bot-{number + 1}"
            parts.append(self._part(segment.start, segment.end, words, name, samples))
        said: list[Part] | None = None
        if spoken is not None:
            samples = call.caller_audio(spoken.start, spoken.end)
            said = [self._part(spoken.start, spoken.end, utterance.transcript, f"{turn:02d}-caller", samples)]
        onset = next((s.start for s in segments if spoken is not None and s.start >= spoken.end), None)
        raw: dict[str, Any] = {
            "end": end,
            "call_sid": self.ids.call_sid,
            "caller": None if spoken is None else {
                "start_s": round(spoken.start, 3), "end_s": round(spoken.end, 3),
                "sentences": [[round(a, 3), round(b, 3)] for a, b in spoken.spans],
            },
            "marks": [[round(t, 3), n] for t, n in call.marks_received],
            "marks_echoed": [[round(t, 3), n] for t, n in call.marks_echoed],
            "clears": [round(t, 3) for t in call.playback.clears],
        }  # fmt: skip
        return BotReply(
            messages=[p.transcript for p in parts if isinstance(p, AudioPart) and p.transcript],
            latency_s=max(0.0, onset - spoken.end) if onset is not None and spoken is not None else 0.0,
            closed=end == "hangup",
            parts=parts,
            said=said,
            raw=raw,
        )

    def _part(self, start: float, end: float, transcript: str, name: str, samples: Any) -> AudioPart:
        file = self.files.write(name, samples) if self.files is not None and len(samples) else None
        return AudioPart(
            start_s=round(start, 3),
            end_s=round(end, 3),
            transcript=transcript,
            file=file,
            duration_s=round(len(samples) / SAMPLE_RATE, 3) if file else None,
        )

    async def final_state(self) -> dict[str, Any] | None:
        url = self._factory.state_url
        if url is None:
            return None
        url = url.replace("{call_sid}", self.ids.call_sid).replace("{stream_sid}", self.ids.stream_sid)
        try:
            status, body = await read_bounded(
                self._factory.client, "GET", url, timeout_s=self._config.timeout_s,
                max_bytes=self._config.max_reply_bytes, who="bot.state_url",
            )  # fmt: skip
        except httpx.HTTPError as exc:
            raise BotError("connection", f"GET bot.state_url failed: {await self._factory.why(exc)}") from exc
        if status == 404:
            return None
        if status >= 400:
            raise BotError(
                "invalid_reply", f"bot.state_url answered HTTP {status}: a JSON object is expected"
            )
        try:
            data = loads_bounded(body, "bot.state_url's answer") if body.strip() else None
        except JSONRefused as exc:
            shown = redact(body[:80].decode("utf-8", "replace"))
            raise BotError("invalid_reply", f"{exc}: {shown!r}; answer a JSON object (or 404)") from None
        if not (data is None or isinstance(data, dict)):
            raise BotError(
                "invalid_reply", f"bot.state_url answered HTTP {status}: a JSON object is expected"
            )
        return data

    async def aclose(self) -> None:
        if self.call is not None:
            await self.call.hang_up()
            self._write_call(self.call)

    def _write_call(self, call: Call) -> None:
        """The whole call as one stereo file (caller left, bot right), for listening end to end."""
        if self.files is None or not call.caller_frames:
            return
        until = call.caller_frames[-1][0]
        left, right = call.caller_audio(0.0, until), call.playback.audio(0.0, until)
        self.files.write("call", np.column_stack([left, right[: len(left)]]).reshape(-1), channels=2)


def voice_bot_factory(config: VoiceBotConfig, suite: Suite, hub: ModelHub) -> VoiceBotFactory:
    """The `voice` kind's factory (simulator/voice/config.py registers it)."""
    return VoiceBotFactory(config, suite.base_dir, record_raw=suite.record_raw, suite=suite)
