"""The knobs of a run, as the command line and programs set them: output folder, progress, the error
budget, a shard of the plan, local worker processes, a Ray cluster. The engine defines them; the API is
where clients take them from."""

from __future__ import annotations

__all__ = [
    "CONVERSATIONS_PER_WORKER",
    "RayBackendOptions",
    "RunOptions",
    "RunResult",
    "ShardInfo",
    "parse_max_errors",
    "parse_shard",
    "parse_workers",
]

from simulator.engine.local_workers import CONVERSATIONS_PER_WORKER, parse_workers
from simulator.engine.ray_backend import RayBackendOptions
from simulator.engine.runner import RunOptions, RunResult, parse_max_errors
from simulator.engine.shards import parse_shard
from simulator.record.manifest import ShardInfo
