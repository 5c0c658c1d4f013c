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

Until they are merged the shards live in a staging folder beside `out` (`staging_folder`), with a small
record of the run (`workers.json`: the worker count and the suite's own limits). When the run is stopped
(Ctrl-C, a killed parent) or a worker fails, nothing is merged and nothing is deleted, and
`simulator run --resume OUT` or `simulator.resume(OUT)` (both call `resume_local_workers`) finishes the
unfinished shards, one worker each, and merges them into `out` as the first attempt would have.
"""

from __future__ import annotations

__all__ = [
    "CONVERSATIONS_PER_WORKER",
    "parse_workers",
    "resume_local_workers",
    "run_local_workers",
    "stopped_words",
    "workers_staging",
]

import contextlib
import json
import os
import shutil
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.engine.merge import MergeResult, merge_shards
from simulator.engine.worker_share import worker_share
from simulator.errors import UserError, in_both
from simulator.record.folder import MANIFEST, RunFolder
from simulator.record.manifest import ShardInfo
from simulator.record.redact import redacted_suite
from simulator.visible import echo

if TYPE_CHECKING:
    from simulator.engine.runner import RunOptions


# The least work that pays for a forked worker (bench/README.md, "issue 47").
CONVERSATIONS_PER_WORKER = 250
# In the staging folder: the worker count and the suite with the run's own limits (not a worker's share).
WORKERS_RECORD = "workers.json"


def staging_folder(out: Path) -> Path:
    """Where a `--workers` run into `out` keeps its shard folders until they are merged."""
    return out.with_name(f".{out.name}.shards")


def workers_staging(out: Path) -> Path | None:
    """The staging folder of an unmerged `--workers` run into `out` (no run folder there yet), else None."""
    staging = staging_folder(out)
    if (out / MANIFEST).exists() or not (staging / WORKERS_RECORD).is_file():
        return None
    return staging


def _finish_words(out: Path) -> str:
    """How to finish a stopped `--workers` run into `out`, from the command line and from Python."""
    return in_both(f"`simulator run --resume {out}`", f"`simulator.resume({str(out)!r})`")


def stopped_words(out: Path, finish: str | None = None) -> str:
    """What a stopped `--workers` run into `out` keeps, and how to finish it: `finish`, the call in the
    caller's words (Python's `simulator.resume`), else both the command line's and Python's."""
    return f"the workers' shards are kept; finish and merge them with {finish or _finish_words(out)}"


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


def _stop_with_parent(parent_end: int, own_copy: int) -> None:
    """Stop this worker as a Ctrl-C would (it saves what it finished) when the parent ends however it ends,
    `kill -9` included: the parent holds the pipe's only other write end, and the kernel closes it then."""
    os.close(own_copy)

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(parent_end, 512):
                pass
        os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C (`_child` makes sure it is one)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _child(suite: Suite, scenarios: list[Scenario], options: RunOptions, pipe: tuple[int, int]) -> None:
    """One worker: run its shard in a fresh event loop, then leave without tearing the interpreter down."""
    from simulator.engine.runner import run_suite
    from simulator.eventloop import run_async

    # SIGINT as Python's default, so the worker's event loop turns a Ctrl-C into the run's cancellation (which
    # saves what it finished). Forked from `simulator.resume`'s thread, it would otherwise keep the handler of
    # the parent's event loop, which in this process cancels nothing: the worker ran on, to its timeouts.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _stop_with_parent(*pipe)
    code = 0
    try:
        run_async(run_suite(suite, scenarios, options))
    except KeyboardInterrupt:  # stopped with the parent (Ctrl-C): what it finished is saved in its shard
        code = 130
    except BaseException as exc:  # reported by the parent as this worker's exit code
        echo(f"worker failed: {type(exc).__name__}: {exc}", flush=True)
        code = 1
    os._exit(code)


def run_local_workers(
    suite: Suite, scenarios: list[Scenario], options: RunOptions, workers: int, out: Path
) -> MergeResult:
    """Run the plan as `workers` forked shard processes and merge them into `out`; the shards' folders are
    removed once merged."""
    _check_can_fork()
    from simulator.config.suite import check_environment
    from simulator.engine.preflight import preflight

    check_environment(suite)
    preflight(suite)  # once, before any worker starts: what `validate` checks
    if out.exists():
        raise UserError(f"{out} already exists: choose a new --out for a run with --workers")
    staging = staging_folder(out)
    if staging.exists():
        raise UserError(
            f"{staging} exists (an earlier --workers run into {out}): finish it with {_finish_words(out)}; "
            "or remove it"
        )
    staging.mkdir(parents=True)
    record = {"workers": workers, "suite": redacted_suite(suite).model_dump(mode="json")}
    (staging / WORKERS_RECORD).write_text(json.dumps(record), encoding="utf-8")
    share = worker_share(suite, workers)  # together the workers keep to the suite's limits
    jobs = []
    for index in range(1, workers + 1):
        path = staging / f"shard-{index}"
        mine = replace(options, out=path, shard=ShardInfo(index=index, count=workers, plan_hash=""))
        jobs.append((path, share, scenarios, mine))
    _run_workers(jobs, out)
    return _merge(staging, out, suite, workers)


def resume_local_workers(out: Path, options: RunOptions) -> MergeResult:
    """Finish an unmerged `--workers` run into `out` (stopped, killed or with a failed worker): each unfinished
    shard resumes in its own worker, then all are merged into `out`, as the first attempt would have."""
    _check_can_fork()
    staging = staging_folder(out)
    try:
        record = json.loads((staging / WORKERS_RECORD).read_text(encoding="utf-8"))
        workers, suite = int(record["workers"]), Suite.model_validate(record["suite"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"{staging / WORKERS_RECORD}: unreadable ({type(exc).__name__}); remove {staging}"
        ) from None
    paths = [staging / f"shard-{index}" for index in range(1, workers + 1)]
    never = [path for path in paths if not (path / MANIFEST).is_file()]
    if never:
        raise UserError(
            f"{never[0]}: this worker never started its shard, so it cannot be resumed; start the run again "
            f"(remove {staging}, then `simulator run SUITE --workers {workers} --out {out}`)"
        )
    jobs = []
    for path in paths:
        folder = RunFolder.open(path)
        manifest = folder.read_manifest()
        if manifest.status == "complete" and not options.retry_errors:
            continue
        _check_free(path, out)
        from simulator.record.recorded import resumed_scenarios

        shard_suite = manifest.rebuild_suite(path)  # the worker's share, as it ran
        mine = replace(options, out=path, resume=True, shard=None)
        jobs.append((path, shard_suite, resumed_scenarios(manifest, shard_suite, path, None), mine))
    _run_workers(jobs, out)
    return _merge(staging, out, suite, workers)


def _check_free(path: Path, out: Path) -> None:
    """Refuse, before any worker starts, a shard another process still writes (a worker of a killed run
    stops moments after its parent: `_stop_with_parent`)."""
    try:
        RunFolder.resume(path).release()  # takes the writer lock (and cuts a half line a kill left)
    except UserError:
        raise UserError(
            f"{path} is still being written by a worker of the stopped run; wait for it to end, then "
            f"{_finish_words(out)}"
        ) from None


def _check_can_fork() -> None:
    import multiprocessing  # here: a run without workers (most runs) never needs it (start-up, issue 47)

    if "fork" not in multiprocessing.get_all_start_methods():
        raise UserError("--workers needs a system that can fork processes (Linux, macOS); run without it")


def _run_workers(jobs: list[tuple[Path, Suite, list[Scenario], RunOptions]], out: Path) -> None:
    """Fork one worker per (shard folder, suite, scenarios, options) and wait for all; a stop or a failure
    names what finishes the run (`_finish_words`)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    pipe = os.pipe()  # the workers watch its read end: they stop when this process ends (`_stop_with_parent`)
    children = []
    try:
        for path, suite, scenarios, options in jobs:
            mine = replace(options, progress=False)
            child = context.Process(target=_child, args=(suite, scenarios, mine, pipe))
            child.start()
            children.append((path, child))
        for _, child in children:
            child.join()
    except KeyboardInterrupt:
        for _, child in children:  # a Ctrl-C reaches the workers too: each saves what it finished, then ends
            child.join()
        echo(stopped_words(out), file=sys.stderr)
        raise
    finally:
        for end in pipe:
            os.close(end)
    failed = [str(path) for path, child in children if child.exitcode != 0]
    if failed:
        raise UserError(
            f"{len(failed)} of {len(children)} workers failed ({', '.join(failed)}); nothing was merged or "
            f"lost: finish the run with {_finish_words(out)}"
        )


def _merge(staging: Path, out: Path, suite: Suite, workers: int) -> MergeResult:
    """Merge the staged shards into `out` (the record holds the run's limits, not a worker's share)."""
    paths = [staging / f"shard-{index}" for index in range(1, workers + 1)]
    unfinished = [
        str(path) for path in paths if RunFolder.open_unsealed(path).read_manifest().status != "complete"
    ]
    if unfinished:
        raise UserError(
            f"{', '.join(unfinished)} did not finish (stopped, or too many errors); nothing was merged or "
            f"lost: finish the run with {_finish_words(out)}"
        )
    result = merge_shards(paths, out, suite=suite)
    shutil.rmtree(staging)
    return result
