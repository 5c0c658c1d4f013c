"""Telephone audio: G.711 μ-law at 8 kHz in 20 ms frames, as a phone carrier streams it.

Python 3.13 dropped `audioop`, so the codec is written here with numpy (the standard segment-and-mantissa
form of G.711, bias 0x84); it is checked against known code points in tests/test_voice_wire.py. Samples
are 16-bit signed integers; `resample` is linear interpolation (enough for speech going to and from a
telephone band).
"""

from __future__ import annotations

__all__ = [
    "FRAME_BYTES",
    "FRAME_S",
    "SAMPLE_RATE",
    "decode",
    "encode",
    "frames",
    "resample",
    "silence",
]

import numpy as np
from numpy.typing import NDArray

SAMPLE_RATE = 8000  # Hz: the telephone rate every Media Streams payload uses
FRAME_S = 0.02  # a media message carries 20 ms
FRAME_BYTES = int(SAMPLE_RATE * FRAME_S)  # 160 μ-law bytes, one per sample

_BIAS = 0x84
_CLIP = 8159  # the largest 14-bit magnitude μ-law codes

Samples = NDArray[np.int16]


def encode(samples: NDArray[np.integer] | NDArray[np.floating]) -> bytes:
    """16-bit linear samples to μ-law bytes (one byte per sample)."""
    x = np.asarray(samples, dtype=np.int32) >> 2  # 14-bit, rounding toward -inf as G.711 does
    sign = (x < 0).astype(np.int32)
    magnitude = np.minimum(np.minimum(np.abs(x), _CLIP) + (_BIAS >> 2), 0x1FFF)
    exponent = np.clip(np.floor(np.log2(magnitude)).astype(np.int32) - 5, 0, 7)
    mantissa = (magnitude >> (exponent + 1)) & 0x0F
    code = ~((sign << 7) | (exponent << 4) | mantissa) & 0xFF
    return code.astype(np.uint8).tobytes()


def decode(data: bytes) -> Samples:
    """μ-law bytes to 16-bit linear samples."""
    u = ~np.frombuffer(data, dtype=np.uint8).astype(np.int32) & 0xFF
    exponent = (u >> 4) & 0x07
    mantissa = u & 0x0F
    magnitude = (((mantissa << 3) + _BIAS) << exponent) - _BIAS
    return np.where(u & 0x80, -magnitude, magnitude).astype(np.int16)


def resample(samples: NDArray[np.integer] | NDArray[np.floating], rate_in: int, rate_out: int) -> Samples:
    """Linear-interpolation resampling of 16-bit samples."""
    x = np.asarray(samples, dtype=np.float64)
    if rate_in == rate_out or len(x) == 0:
        return np.clip(x, -32768, 32767).astype(np.int16)
    count = max(1, round(len(x) * rate_out / rate_in))
    positions = np.linspace(0, len(x) - 1, count)
    out = np.interp(positions, np.arange(len(x)), x)
    return np.clip(np.round(out), -32768, 32767).astype(np.int16)


def silence(seconds: float) -> Samples:
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.int16)


def frames(samples: Samples) -> list[bytes]:
    """8 kHz samples as 20 ms μ-law payloads of 160 bytes each (the last padded with silence)."""
    pad = (-len(samples)) % FRAME_BYTES
    whole = np.concatenate([samples, np.zeros(pad, dtype=np.int16)]) if pad else samples
    data = encode(whole)
    return [data[i : i + FRAME_BYTES] for i in range(0, len(data), FRAME_BYTES)]
