"""A monotonic stopwatch shared by providers and bot adapters."""

from __future__ import annotations

import time


class Stopwatch:
    """Measures wall time since creation with `time.perf_counter`."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
