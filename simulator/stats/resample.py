"""Bootstrap resamples drawn in bulk with numpy, the very ones `random.Random.choices` draws one at a time.

`rng.choices(population, k=k)` takes `population[floor(rng.random() * n)]` k times, and `random()` is
MT19937's 53-bit double `((a >> 5) * 2**26 + (b >> 6)) / 2**53`. numpy's legacy `RandomState` runs the same
generator and makes its doubles by the same formula, so `draws` loads the Random's state into one, takes
every index of a block of resamples in a single call and writes the state back: the same indexes as the
loop, and the Random goes on exactly where the loop would have left it. `sums` and `fsums` then add the
drawn values as Python's `sum` and `math.fsum` do, to the last bit and with the same type, so an interval
seeded years ago is the same interval today (reports and golden files are compared byte for byte).
"""

from __future__ import annotations

__all__ = ["draws", "fsums", "sums"]

import math
import random
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

# Cells (resamples x draws) per block: a 10,000 x 2,000 bootstrap takes 20 blocks of 8 MB arrays.
_BLOCK = 1 << 20
# Python's own `sum` of floats: a plain left-to-right sum up to 3.11, compensated (Neumaier) from 3.12 on.
# Asked of the interpreter rather than read from its version: 1 + 1e100 + 1 - 1e100 is 2 only compensated.
_COMPENSATED = sum([1.0, 1e100, 1.0, -1e100]) == 2.0
_THREAD = threading.local()
_EXACT_INT = 2**53  # int sums below this are exact in int64 and in a double, so `s / n` rounds the same


def draws(rng: random.Random, n: int, k: int, resamples: int) -> Iterator[NDArray[np.intp]]:
    """Blocks of rows of k indexes into a population of n, one row per resample: together the same as
    `[rng.choices(range(n), k=k) for _ in range(resamples)]`, with `rng` left in the same state.

    The state is written back after every block, so a caller that stops early leaves `rng` where the
    resamples it took would have left it."""
    if type(rng) is not random.Random:
        raise TypeError(f"draws needs a random.Random (its generator is MT19937), got {type(rng).__name__}")
    if n < 1 and resamples > 0 and k > 0:
        raise IndexError("cannot draw from an empty population")
    return _blocks(rng, n, k, resamples)


def _blocks(rng: random.Random, n: int, k: int, resamples: int) -> Iterator[NDArray[np.intp]]:
    if resamples < 1 or k < 1:
        return
    size = float(n)  # as `choices`: floor(random() * n) with n a float
    rows = max(1, _BLOCK // k)
    legacy = _legacy()
    for start in range(0, resamples, rows):
        block = min(rows, resamples - start)
        version, internal, gauss = rng.getstate()
        legacy.set_state(("MT19937", np.array(internal[:-1], dtype=np.uint32), internal[-1], 0, 0.0))
        picked = (legacy.random_sample(block * k) * size).astype(np.intp).reshape(block, k)
        state = legacy.get_state(legacy=False)["state"]
        rng.setstate((version, (*state["key"].tolist(), state["pos"]), gauss))
        yield picked


def _legacy() -> np.random.RandomState:
    """This thread's RandomState (making one seeds it from the system, 0.3 ms); every draw loads its state."""
    legacy: np.random.RandomState | None = getattr(_THREAD, "legacy", None)
    if legacy is None:
        legacy = _THREAD.legacy = np.random.RandomState()
    return legacy


def sums(values: Sequence[Any], rows: NDArray[np.intp]) -> list[Any]:
    """`[sum(values[i] for i in row) for row in rows]`, the same numbers and types: ints and whole-number
    floats summed exactly (every partial sum is exact, so order and compensation change nothing), other
    floats as this Python's `sum` adds them; anything else (a mix of ints and floats, numpy scalars, big
    ints, Fractions) by `sum` itself."""
    kinds = {type(v) for v in values}
    if kinds and kinds <= {int, bool} and max(abs(int(v)) for v in values) * rows.shape[1] < _EXACT_INT:
        return list(np.asarray(values, dtype=np.int64)[rows].sum(axis=1).tolist())
    if kinds != {float}:
        return _slow_sums(values, rows)
    array = np.asarray(values, dtype=np.float64)
    largest = float(np.abs(array).max())  # inf or NaN when there is one
    if largest * rows.shape[1] < _EXACT_INT and bool(np.all(np.trunc(array) == array)):
        return list(array.astype(np.int64)[rows].sum(axis=1).astype(np.float64).tolist())
    return list(_float_sums(array, rows).tolist())


def _slow_sums(values: Sequence[Any], rows: NDArray[np.intp]) -> list[Any]:
    return [sum(values[i] for i in row) for row in rows.tolist()]


def _float_sums(array: NDArray[np.float64], rows: NDArray[np.intp]) -> NDArray[np.float64]:
    """Python's `sum` of each row's floats. It starts from the int 0, so the first float becomes 0.0 + x:
    the same as adding 0.0 last (only an all -0.0 row tells them apart). Up to 3.11 a plain running sum,
    which `cumsum` is; from 3.12 Neumaier's compensated sum, kept for all rows at once, draw by draw."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf and NaN come out as Python's `sum` gives them
        if not _COMPENSATED:
            return np.cumsum(array[rows], axis=1)[:, -1] + 0.0
        columns = array[np.ascontiguousarray(rows.T)]
        total = columns[0] + 0.0
        lost = np.zeros_like(total)
        for x in columns[1:]:
            added = total + x
            lost += np.where(np.abs(total) >= np.abs(x), (total - added) + x, (x - added) + total)
            total = added
        return np.where((lost != 0.0) & np.isfinite(lost), total + lost, total)


def fsums(groups: Sequence[Sequence[float]], rows: NDArray[np.intp]) -> list[float]:
    """`[math.fsum(v for i in row for v in groups[i]) for row in rows]`: each resample's exact sum, rounded
    once. A finite float is an integer times a power of two, so over a common power the exact sums are
    integer sums: numpy adds them in pieces small enough never to overflow, and Python's int division
    rounds the whole as `fsum` does. Negative or non-finite values, non-floats and values spanning more
    than about 2**500 go through `fsum` itself."""
    if not all(
        type(v) is float and math.isfinite(v) and math.copysign(1.0, v) > 0.0 for g in groups for v in g
    ):
        return _slow_fsums(groups, rows)
    ratios = [[v.as_integer_ratio() for v in group] for group in groups]
    shift = max((q.bit_length() - 1 for group in ratios for _, q in group), default=0)
    exact = [sum(p << (shift - q.bit_length() + 1) for p, q in group) for group in ratios]
    bits = 62 - rows.shape[1].bit_length()  # k pieces below 2**bits add up below 2**62
    pieces = max(total.bit_length() for total in exact) // bits + 1
    if pieces > 12:
        return _slow_fsums(groups, rows)
    mask = (1 << bits) - 1
    split = np.array(
        [[(total >> (bits * i)) & mask for i in range(pieces)] for total in exact], dtype=np.int64
    )
    resamples, n = rows.shape[0], len(groups)
    counts = np.bincount((rows + np.arange(resamples)[:, None] * n).ravel(), minlength=resamples * n)
    added = counts.reshape(resamples, n) @ split
    exact_sums = added[:, 0].astype(object)  # Python ints from here: the whole sums exceed 64 bits
    for i in range(1, pieces):
        exact_sums += added[:, i].astype(object) << (bits * i)
    return list((exact_sums / (1 << shift)).tolist())


def _slow_fsums(groups: Sequence[Sequence[float]], rows: NDArray[np.intp]) -> list[float]:
    return [math.fsum(v for i in row for v in groups[i]) for row in rows.tolist()]
