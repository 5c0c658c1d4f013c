"""Run folders beyond one run: shards merged into one folder, a run split over local worker processes,
and what a resume may change (operational settings only)."""

from __future__ import annotations

__all__ = [
    "MergeResult",
    "adopt_operational",
    "apply_rate_overrides",
    "merge_shards",
    "refuse_new_cells",
    "resume_local_workers",
    "run_local_workers",
    "stopped_words",
    "workers_staging",
]

from simulator.engine.local_workers import (
    resume_local_workers,
    run_local_workers,
    stopped_words,
    workers_staging,
)
from simulator.engine.merge import MergeResult, merge_shards
from simulator.engine.operational import adopt_operational, apply_rate_overrides, refuse_new_cells
