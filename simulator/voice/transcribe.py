"""The local transcriber of the bot's speech: pocketsphinx (its English model ships in the wheel), offline.

Decoding runs in slices of 50 ms of audio with the event loop given a turn between slices: pocketsphinx
holds the GIL while it works, and the carrier's 20 ms media clock must keep running. A recogniser writes no
punctuation, and the simulated patient reads a question by its question mark, so each stretch of speech
gets one mark: that of the closest of the bot's own phrases (`transcriber.phrases`, when half its words
were heard and most of what was heard is in it: a recogniser that drops "does" from "Does it spread?"
still asks), else `?` when it opens
with a question word ("do", "what", "are", ...) or holds a verb before its subject ("does it", "are you"),
else a full stop (a small punctuation restorer, as deployed transcribers have).
"""

from __future__ import annotations

__all__ = ["Transcriber", "punctuate"]

import asyncio
import importlib.util
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.errors import UserError
from simulator.voice.language_model import corpus_words, write_model
from simulator.voice.mulaw import SAMPLE_RATE, resample

_MODEL_RATE = 16000  # the shipped en-us acoustic model's rate: telephone audio is upsampled to it
_SLICE = 800  # 50 ms at 16 kHz per decoding step

QUESTION_OPENERS = frozenset(
    {"do", "does", "did", "is", "are", "was", "were", "can", "could", "would", "will", "should", "have",
     "has", "had", "what", "when", "where", "which", "who", "why", "how", "any", "anything"}
)  # fmt: skip
# A verb put before its subject ("does it", "are you") asks, wherever the recogniser's text starts.
_INVERSION = re.compile(
    r"\b(?:do|does|did|is|are|was|were|can|could|would|will|should|have|has)\s+"
    r"(?:you|it|the|your|he|she|they|there|this|that|anyone)\b"
)


def missing_transcriber() -> str | None:
    """Why the transcriber cannot run here, or None."""
    if importlib.util.find_spec("pocketsphinx") is None:
        return 'needs pocketsphinx: pip install -e ".[voice]"'
    return None


def _agreement(phrase: frozenset[str], heard: frozenset[str]) -> float:
    """At least 1 when half the phrase's words were heard and 80% of what was heard is in the phrase."""
    if not phrase or not heard:
        return 0.0
    shared = len(phrase & heard)
    return min(shared / len(phrase) / 0.5, shared / len(heard) / 0.8)


def punctuate(words: str, phrases: list[tuple[frozenset[str], str]] | None = None) -> str:
    """A transcript with its one sentence mark: the closest phrase's (`phrases`: (words, mark) pairs), or
    `?` after an opening question word or an inverted verb, else `.`."""
    words = words.strip()
    if not words:
        return ""
    heard = frozenset(corpus_words(words))
    best = max(phrases or [], key=lambda p: _agreement(p[0], heard), default=None)
    if best is not None and _agreement(best[0], heard) >= 1.0:
        mark = best[1]
    else:
        first = words.split()[0].lower()
        mark = "?" if first in QUESTION_OPENERS or _INVERSION.search(words.lower()) else "."
    return words[0].upper() + words[1:] + mark


class Transcriber:
    """One pocketsphinx decoder, with the general English model or a domain model built from `phrases`."""

    def __init__(self, phrases: list[str] | None = None) -> None:
        reason = missing_transcriber()
        if reason is not None:
            raise UserError(f"the voice channel transcribes the bot's speech locally and {reason}")
        from pocketsphinx import Decoder

        # Dither (seeded, so the same audio gives the same words): the carrier's digital silence around a
        # stretch of speech otherwise throws off pocketsphinx's noise estimate and loses the first words.
        options: dict[str, Any] = {"samprate": _MODEL_RATE, "loglevel": "FATAL", "dither": True, "seed": 1}
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        if phrases:
            self._folder = tempfile.TemporaryDirectory(prefix="simulator-lm-")
            options.update(write_model(phrases, Path(self._folder.name)))
        self._decoder = Decoder(**options)
        # Each phrase's words and the mark it ends with (its last sentence's), for punctuate.
        self.marks = [
            (frozenset(corpus_words(line)), "?" if line.rstrip().endswith("?") else ".")
            for line in phrases or []
        ]
        self._lock = asyncio.Lock()

    async def transcribe(self, samples: NDArray[np.int16], rate: int = SAMPLE_RATE) -> str:
        """The words in `samples` (lower case, no punctuation); empty when none were recognised."""
        audio = resample(samples, rate, _MODEL_RATE)
        async with self._lock:  # one decoder, one utterance at a time
            decoder = self._decoder
            decoder.start_utt()
            for start in range(0, len(audio), _SLICE):
                decoder.process_raw(audio[start : start + _SLICE].tobytes(), False, False)
                await asyncio.sleep(0)
            decoder.end_utt()
            hypothesis = decoder.hyp()
        return " ".join(hypothesis.hypstr.split()) if hypothesis is not None else ""

    def transcribe_now(self, samples: NDArray[np.int16], rate: int = SAMPLE_RATE) -> str:
        """The same, blocking (for benchmarks and tools outside an event loop)."""
        return asyncio.run(self.transcribe(samples, rate))

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
