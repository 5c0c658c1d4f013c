"""Where speech is in a track: 20 ms frames above an energy floor, joined into segments across short gaps.

The bot's audio is judged by what the caller would hear: a frame is voiced when its RMS is above
`FLOOR_DBFS` (well above telephone line noise, well below speech), and voiced frames closer than
`merge_gap_s` are one segment (the gaps between words and short phrases stay inside it).
"""

from __future__ import annotations

__all__ = ["FLOOR_DBFS", "merge", "rms_dbfs", "voiced"]

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simulator.voice.mulaw import FRAME_BYTES

FLOOR_DBFS = -40.0


@dataclass(frozen=True)
class Segment:
    """A stretch of speech, in seconds on the call's clock."""

    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def rms_dbfs(samples: NDArray[np.int16]) -> float:
    """The level of 16-bit samples in dB below full scale (-120 for silence)."""
    if len(samples) == 0:
        return -120.0
    rms = float(np.sqrt(np.mean(np.square(samples.astype(np.float64)))))
    return -120.0 if rms < 1e-3 else 20.0 * float(np.log10(rms / 32768.0))


def voiced(samples: NDArray[np.int16], floor_dbfs: float = FLOOR_DBFS) -> list[bool]:
    """One flag per 20 ms frame of 8 kHz samples: whether it holds speech (its level above the floor)."""
    return [rms_dbfs(samples[i : i + FRAME_BYTES]) > floor_dbfs for i in range(0, len(samples), FRAME_BYTES)]


def merge(spans: list[tuple[float, float]], gap_s: float) -> list[Segment]:
    """Voiced spans (start, end) as segments, joining spans less than `gap_s` apart."""
    out: list[Segment] = []
    for start, end in sorted(spans):
        if out and start - out[-1].end < gap_s:
            out[-1] = Segment(out[-1].start, max(out[-1].end, end))
        else:
            out.append(Segment(start, end))
    return out
