"""The caller's voice: the patient's words synthesised offline with espeak-ng, as a person says them.

A message is said sentence by sentence at the caller's rate, with a pause between sentences, now and then
a filler ("um", "uh") before a sentence, over background noise at a set level. Everything random is drawn
from a seed, and espeak-ng is deterministic, so a caller says the same thing the same way on every run.
The result keeps where each sentence is, so the carrier knows exactly when the caller is speaking.
"""

from __future__ import annotations

__all__ = ["Utterance", "noise", "say", "sentences", "synthesise"]

import asyncio
import hashlib
import io
import random
import re
import wave
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.errors import UserError
from simulator.voice.mulaw import SAMPLE_RATE, resample
from simulator.voice.tools import espeak_path

FILLERS = ("um", "uh", "er", "you know")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Utterance:
    """What the caller says in one turn: 8 kHz samples, the words as spoken (fillers included), and the
    voiced sentences' (start, end) in seconds from the utterance's start."""

    samples: NDArray[np.int16]
    transcript: str
    spans: list[tuple[float, float]]

    @property
    def duration(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


async def synthesise(text: str, voice: str, rate_wpm: int) -> NDArray[np.int16]:
    """`text` spoken by espeak-ng at `rate_wpm` words a minute, as 8 kHz 16-bit samples."""
    process = await asyncio.create_subprocess_exec(
        espeak_path(), "-v", voice, "-s", str(rate_wpm), "--stdout", text,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    if process.returncode != 0 or not out:
        why = err.decode("utf-8", "replace").strip()[:200] or f"exit {process.returncode}"
        raise UserError(f"espeak-ng could not say a sentence with voice '{voice}': {why}")
    with wave.open(io.BytesIO(out)) as audio:
        rate = audio.getframerate()
        samples = np.frombuffer(audio.readframes(audio.getnframes()), dtype=np.int16)
    return resample(samples, rate, SAMPLE_RATE)


def noise(seconds: float, level_dbfs: float | None, rng: np.random.Generator) -> NDArray[np.int16]:
    """White line noise at `level_dbfs` RMS (None: digital silence)."""
    count = round(seconds * SAMPLE_RATE)
    if level_dbfs is None:
        return np.zeros(count, dtype=np.int16)
    scale = 32768.0 * 10 ** (level_dbfs / 20)
    return np.clip(rng.normal(0.0, scale, count), -32768, 32767).astype(np.int16)


def _seed_int(seed: str) -> int:
    """A stable integer from a text seed (Python's own str hash changes between processes)."""
    return int.from_bytes(hashlib.sha256(seed.encode("utf-8")).digest()[:8], "big")


def _trim(samples: NDArray[np.int16]) -> NDArray[np.int16]:
    """espeak-ng's leading and trailing silence cut off, so the pauses are the ones asked for."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > 300)
    return samples[loud[0] : loud[-1] + 1] if len(loud) else samples[:0]


async def say(
    text: str,
    *,
    voice: str,
    rate_wpm: int,
    pause_s: float,
    disfluency: float,
    noise_dbfs: float | None,
    seed: str,
) -> Utterance:
    """The caller saying `text`: each sentence synthesised, `pause_s` apart, a filler before a sentence with
    chance `disfluency`, line noise mixed in throughout."""
    rng = random.Random(seed)
    pieces: list[NDArray[np.int16]] = []
    spans: list[tuple[float, float]] = []
    words: list[str] = []
    at = 0
    for index, sentence in enumerate(sentences(text) or [text]):
        spoken = sentence
        if rng.random() < disfluency:
            filler = rng.choice(FILLERS)
            spoken = f"{filler}, {sentence[0].lower()}{sentence[1:]}" if sentence else filler
        if index:
            gap = np.zeros(round(pause_s * SAMPLE_RATE), dtype=np.int16)
            pieces.append(gap)
            at += len(gap)
        voiced = _trim(await synthesise(spoken, voice, rate_wpm))
        pieces.append(voiced)
        spans.append((at / SAMPLE_RATE, (at + len(voiced)) / SAMPLE_RATE))
        at += len(voiced)
        words.append(spoken)
    samples = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int16)
    line = noise(len(samples) / SAMPLE_RATE, noise_dbfs, np.random.default_rng(_seed_int(seed)))
    mixed = np.clip(samples.astype(np.int32) + line[: len(samples)], -32768, 32767).astype(np.int16)
    return Utterance(mixed, " ".join(words), spans)
