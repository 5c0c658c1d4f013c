"""The run's garbage-collector settings: the start-up heap frozen and rarer collections while the run goes,
and everything put back afterwards (a library caller's process keeps its own settings)."""

from __future__ import annotations

import gc

import pytest

from simulator.eventloop import _RUN_GC_THRESHOLDS, frozen_heap


@pytest.mark.parametrize("before", [(700, 10, 10), (1000, 5, 5), (50, 2, 3)])
def test_the_run_freezes_the_heap_and_collects_rarely_then_puts_everything_back(
    before: tuple[int, int, int],
) -> None:
    saved = gc.get_threshold()
    gc.set_threshold(*before)
    try:
        with frozen_heap(True):
            assert gc.get_threshold() == _RUN_GC_THRESHOLDS
            assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == before and gc.get_freeze_count() == 0
        with pytest.raises(RuntimeError), frozen_heap(True):  # put back on an error too
            raise RuntimeError("a failed run")
        assert gc.get_threshold() == before and gc.get_freeze_count() == 0
        with frozen_heap(False):  # turned off: nothing changes
            assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*saved)
