"""The bot's audio as the caller hears it: queued and played at real-time speed, cut short by `clear`.

A bot may send its speech faster than real time (pipecat sends at twice the rate); a carrier plays it
out at 8 kHz, so what was queued plays after what came before. A `mark` is echoed once everything queued
before it has played; `clear` drops what has not played yet and echoes every pending mark at once (the bot
was interrupted). Each 20 ms frame keeps its play time and whether it holds speech, so the call knows when
the bot spoke.
"""

from __future__ import annotations

__all__ = ["Playback"]

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.voice.activity import FLOOR_DBFS, rms_dbfs
from simulator.voice.mulaw import FRAME_BYTES, SAMPLE_RATE, decode


@dataclass(frozen=True)
class BotFrame:
    """Up to 20 ms of the bot's audio: when it plays (seconds on the call's clock) and whether it is speech."""

    at: float
    samples: NDArray[np.int16]
    voiced: bool

    @property
    def end(self) -> float:
        return self.at + len(self.samples) / SAMPLE_RATE


class Playback:
    """The carrier's playback queue for one call."""

    def __init__(self, floor_dbfs: float = FLOOR_DBFS) -> None:
        self.frames: list[BotFrame] = []  # in play order: each starts when the one before ends, or later
        self._starts: list[float] = []  # frames[i].at, for bisecting
        self.queued_until = 0.0  # when everything queued so far has played
        self._marks: list[tuple[float, str]] = []  # (when it is due, name)
        self._floor = floor_dbfs
        self.clears: list[float] = []
        self.received_bytes = 0

    def add(self, now: float, audio: bytes) -> None:
        """Queue μ-law audio that arrived at `now`."""
        self.received_bytes += len(audio)
        samples = decode(audio)
        start = max(now, self.queued_until)
        for offset in range(0, len(samples), FRAME_BYTES):
            piece = samples[offset : offset + FRAME_BYTES]
            at = start + offset / SAMPLE_RATE
            self.frames.append(BotFrame(at, piece, rms_dbfs(piece) > self._floor))
            self._starts.append(at)
        self.queued_until = start + len(samples) / SAMPLE_RATE

    def mark(self, now: float, name: str) -> None:
        self._marks.append((max(now, self.queued_until), name))

    def due_marks(self, now: float) -> list[str]:
        """The marks whose audio has played by `now`, in order; they are echoed and forgotten."""
        due = [name for at, name in self._marks if at <= now]
        self._marks = [(at, name) for at, name in self._marks if at > now]
        return due

    def clear(self, now: float) -> list[str]:
        """Drop what has not played by `now` (a frame playing is cut at `now`); return every pending mark."""
        self.clears.append(now)
        kept: list[BotFrame] = []
        for frame in self.frames:
            if frame.at >= now:
                continue
            if frame.end > now:
                cut = frame.samples[: int((now - frame.at) * SAMPLE_RATE)]
                frame = BotFrame(frame.at, cut, rms_dbfs(cut) > self._floor)
            kept.append(frame)
        self.frames = kept
        self._starts = [frame.at for frame in kept]
        self.queued_until = min(self.queued_until, now)
        pending = [name for _, name in self._marks]
        self._marks = []
        return pending

    def busy(self, now: float) -> bool:
        """Whether audio is still queued to play after `now`."""
        return self.queued_until > now

    def _window(self, since: float, until: float) -> list[BotFrame]:
        first = max(0, bisect_left(self._starts, since) - 1)
        last = bisect_left(self._starts, until)
        return [f for f in self.frames[first:last] if f.end > since]

    def voiced_spans(self, since: float, until: float) -> list[tuple[float, float]]:
        """The (start, end) of speech frames playing within [since, until)."""
        return [(max(f.at, since), min(f.end, until)) for f in self._window(since, until) if f.voiced]

    def audio(self, since: float, until: float) -> NDArray[np.int16]:
        """What played in [since, until) as one 8 kHz track (silence where nothing played)."""
        out = np.zeros(max(0, round((until - since) * SAMPLE_RATE)), dtype=np.int16)
        for frame in self._window(since, until):
            first = round((frame.at - since) * SAMPLE_RATE)
            piece = frame.samples
            if first < 0:
                piece, first = piece[-first:], 0
            piece = piece[: max(0, len(out) - first)]
            out[first : first + len(piece)] = piece
        return out
