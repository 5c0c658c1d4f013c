"""`simulator run --workers N|auto` on the local backend: one run, one record, every core.

One event loop is one core; a run of many fast conversations is bound by it. Here the plan is split into N
deterministic shards (`engine/shards.py`, the same split as `--shard i/N`), each run by a forked child
process into its own shard folder, and the shards are merged (`engine/merge.py`) into the one run folder
the user asked for: the same conversations, verdicts and counts as a one-process run. Forking after the
suite is parsed means a child pays for no interpreter start-up and no second parse.

`auto` forks only when the run is big enough to gain (`auto_workers`): a worker costs its own connections,
event loop and warm-up, and the merge reads every record once more, while a one-process run leaves a core
idle until its event loop is saturated. On the bench (`bench/run_bench.py --workers`, figures in
bench/README.md) 100 conversations gained nothing and cost up to 55% more CPU; 500 gained about a third of
the wall time. So `auto` gives each worker at least `CONVERSATIONS_PER_WORKER` planned conversations, and
below twice that runs in one process, as without `--workers`.

When a worker fails, nothing is merged and nothing is deleted: each shard folder can be resumed
(`simulator run --resume`) and merged by hand (`simulator merge`), as the error says.
"""

from __future__ import annotations

__all__ = ["CONVERSATIONS_PER_WORKER", "parse_workers", "run_local_workers"]

import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.engine.merge import MergeResult, merge_shards
from simulator.engine.worker_share import worker_share
from simulator.errors import UserError
from simulator.record.manifest import ShardInfo
from simulator.visible import echo

if TYPE_CHECKING:
    from simulator.engine.runner import RunOptions


# The least work that pays for a forked worker (bench/README.md, "issue 47").
CONVERSATIONS_PER_WORKER = 250


def auto_workers(planned: int, cores: int | None = None) -> int:
    """`--workers auto` for a run of `planned` conversations: one worker per CONVERSATIONS_PER_WORKER, at
    most one per core; 1 means run in this process (no fork)."""
    cores = cores if cores is not None else os.cpu_count() or 1
    return max(1, min(cores, planned // CONVERSATIONS_PER_WORKER))


def parse_workers(text: str, planned: int | None = None) -> int:
    """`auto` (by `auto_workers` for `planned` conversations, or the machine's cores when the plan is not
    known) or a count of at least 1."""
    if text == "auto":
        return auto_workers(planned) if planned is not None else os.cpu_count() or 1
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise UserError(f"--workers {text}: write a count of at least 1, or auto (the machine's cores)")


def _child(suite: Suite, scenarios: list[Scenario], options: RunOptions) -> None:
    """One worker: run its shard in a fresh event loop, then leave without tearing the interpreter down."""
    from simulator.engine.runner import run_suite
    from simulator.eventloop import run_async

    code = 0
    try:
        run_async(run_suite(suite, scenarios, options))
    except BaseException as exc:  # reported by the parent as this worker's exit code
        echo(f"worker failed: {type(exc).__name__}: {exc}", flush=True)
        code = 1
    os._exit(code)


def run_local_workers(
    suite: Suite, scenarios: list[Scenario], options: RunOptions, workers: int, out: Path
) -> MergeResult:
    """Run the plan as `workers` forked shard processes and merge them into `out`; the shards' folders are
    removed once merged."""
    import multiprocessing  # here: a run without workers (most runs) never needs it (start-up, issue 47)

    if "fork" not in multiprocessing.get_all_start_methods():
        raise UserError("--workers needs a system that can fork processes (Linux, macOS); run without it")
    from simulator.config.suite import check_environment
    from simulator.engine.preflight import preflight

    check_environment(suite)
    preflight(suite)  # once, before any worker starts: what `validate` checks
    if out.exists():
        raise UserError(f"{out} already exists: choose a new --out for a run with --workers")
    staging = out.with_name(f".{out.name}.shards")
    if staging.exists():
        raise UserError(f"{staging} exists (an earlier --workers run): resume and merge it, or remove it")
    staging.mkdir(parents=True)
    context = multiprocessing.get_context("fork")
    share = worker_share(suite, workers)  # together the workers keep to the suite's limits
    paths = [staging / f"shard-{index}" for index in range(1, workers + 1)]
    children = []
    for index, path in enumerate(paths, start=1):
        shard = ShardInfo(index=index, count=workers, plan_hash="")
        mine = replace(options, out=path, shard=shard, progress=False)
        child = context.Process(target=_child, args=(share, scenarios, mine))
        child.start()
        children.append(child)
    for child in children:
        child.join()
    failed = [str(path) for path, child in zip(paths, children, strict=True) if child.exitcode != 0]
    if failed:
        raise UserError(
            f"{len(failed)} of {workers} workers failed ({', '.join(failed)}); nothing was merged or lost: "
            f"finish each with `simulator run --resume SHARD`, then `simulator merge {staging}/shard-* --out {out}`"
        )
    result = merge_shards(paths, out, suite=suite)  # the record holds the run's limits, not a worker's share
    shutil.rmtree(staging)
    return result
