"""Local speech services for pipecat: espeak-ng as a TTS service, pocketsphinx as a segmented STT service.

pipecat ships no offline English STT/TTS that installs without downloading a model at run time, so this
example wraps the two local engines in pipecat's own service classes (`TTSService.run_tts`,
`SegmentedSTTService.run_stt`), as a team would wrap any engine pipecat has no plugin for. The STT's domain
language model is built with the simulator's own writer (simulator/voice/language_model.py).
"""

from __future__ import annotations

import asyncio
import io
import tempfile
import wave
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import numpy as np
from pipecat.frames.frames import ErrorFrame, Frame, TranscriptionFrame
from pipecat.services.settings import STTSettings, TTSSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.services.tts_service import TTSService
from pipecat.utils.time import time_now_iso8601

from simulator.voice.language_model import write_model

ESPEAK_RATE = 22050


class EspeakTTSService(TTSService):
    """Text to speech with the espeak-ng command (a system package), streamed as pipecat audio frames."""

    def __init__(self, *, voice: str = "en-us", rate_wpm: int = 170, **kwargs: object) -> None:
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            settings=TTSSettings(model=None, voice=voice, language=None),
            **kwargs,
        )
        self._voice = voice
        self._rate = rate_wpm

    def can_generate_metrics(self) -> bool:
        return True

    async def _speak(self, text: str) -> bytes:
        process = await asyncio.create_subprocess_exec(
            "espeak-ng", "-v", self._voice, "-s", str(self._rate), "--stdout", text,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await process.communicate()
        with wave.open(io.BytesIO(out)) as audio:
            return audio.readframes(audio.getnframes())

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        async def chunks() -> AsyncIterator[bytes]:
            pcm = await self._speak(text)
            step = ESPEAK_RATE // 10 * 2  # 100 ms of 16-bit samples
            for start in range(0, len(pcm), step):
                yield pcm[start : start + step]

        try:
            async for frame in self._stream_audio_frames_from_iterator(
                chunks(), in_sample_rate=ESPEAK_RATE, context_id=context_id
            ):
                yield frame
        except Exception as exc:  # a TTS failure is a pipeline error frame, as pipecat's services report it
            yield ErrorFrame(error=f"espeak-ng failed: {exc}")


class PocketsphinxSTTService(SegmentedSTTService):
    """Speech to text with pocketsphinx (its English model ships in the wheel), on the segments pipecat's
    VAD cuts, biased to the phrases the bot expects to hear."""

    def __init__(self, *, phrases: list[str], **kwargs: object) -> None:
        super().__init__(settings=STTSettings(model=None, language=None), **kwargs)
        from pocketsphinx import Decoder

        self._folder = tempfile.TemporaryDirectory(prefix="voice-bot-lm-")
        model = write_model(phrases, Path(self._folder.name))  # the simulator's own domain-model writer
        self._decoder = Decoder(samprate=16000, loglevel="FATAL", dither=True, seed=1, **model)

    @property
    def wants_wav_segments(self) -> bool:
        return False  # raw 16-bit PCM

    def can_generate_metrics(self) -> bool:
        return True

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame, None]:
        samples = np.frombuffer(audio, dtype=np.int16)
        if self.sample_rate != 16000:
            positions = np.linspace(0, len(samples) - 1, round(len(samples) * 16000 / self.sample_rate))
            samples = np.interp(positions, np.arange(len(samples)), samples).astype(np.int16)
        decoder = self._decoder
        decoder.start_utt()
        for start in range(0, len(samples), 800):  # 50 ms at a time, the event loop free in between
            decoder.process_raw(samples[start : start + 800].tobytes(), False, False)
            await asyncio.sleep(0)
        decoder.end_utt()
        hypothesis = decoder.hyp()
        text = " ".join(hypothesis.hypstr.split()) if hypothesis is not None else ""
        if text:
            yield TranscriptionFrame(text, self._user_id, time_now_iso8601())
