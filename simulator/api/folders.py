"""Run folders beyond one run: shards merged into one folder, a run split over local worker processes,
and what a resume may change (operational settings only)."""

from __future__ import annotations

__all__ = ["adopt_operational", "apply_rate_overrides", "merge_shards", "run_local_workers"]

from simulator.engine.local_workers import run_local_workers
from simulator.engine.merge import merge_shards
from simulator.engine.operational import adopt_operational, apply_rate_overrides
