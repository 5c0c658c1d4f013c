"""`simulator.run` / `arun`, `resume` / `aresume`, and one conversation with a supplied user (`atalk`):
the engine's entry points for programs, notebooks, the command line, the pytest plugin and the desk.

`run` and `resume` are thin sync wrappers: with no event loop running in this thread they run the
coroutine on the engine's loop; inside one (a Jupyter notebook) they run it on a worker thread with its own
loop and wait for it, so `simulator.run(...)` works in a notebook cell as in a script.
"""

from __future__ import annotations

__all__ = ["aresume", "arun", "atalk", "execute", "resume", "run", "run_sync"]

import asyncio
import concurrent.futures
from collections.abc import Callable, Collection, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from simulator.api.door import FOLDER, checked, fresh_options, of
from simulator.api.plan import Plan, prepare
from simulator.api.result import Comparison, Result
from simulator.errors import FolderTaken, UserError

if TYPE_CHECKING:
    from simulator.config.scenario import Scenario
    from simulator.config.suite import Suite
    from simulator.engine.runner import RunOptions
    from simulator.record.manifest import Manifest
    from simulator.users.base import SimulatedUser

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to completion from sync code, even inside a running event loop (Jupyter)."""
    from simulator.eventloop import run_async

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop_running = False
    else:
        loop_running = True
    if not loop_running:
        return run_async(coroutine)
    # This thread's loop is busy running the caller: the run gets a thread and a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="simulator-run") as pool:
        return pool.submit(run_async, coroutine).result()


def _options(options: RunOptions | None, out: str | Path | None, progress: bool | None) -> RunOptions:
    """The options this call runs with: a copy, never the caller's object (`resume` sets out and resume on
    it, and a later `run` with the same object wrote into that folder)."""
    from dataclasses import replace

    from simulator.engine.runner import RunOptions

    if options is None:
        chosen = RunOptions(progress=False)
    else:
        chosen = replace(options, settings_changed=dict(options.settings_changed or {}))
        chosen.out = Path(chosen.out) if chosen.out is not None else None  # the engine joins paths on it
    if out is not None:
        chosen.out = Path(out)
    if progress is not None:
        chosen.progress = progress
    return chosen


async def execute(plan: Plan, options: RunOptions) -> Result:
    """Run a planned suite (one run folder); a suite with a matrix is compare's."""
    from simulator.config.suite import check_environment
    from simulator.engine.preflight import preflight
    from simulator.engine.runner import run_suite

    if plan.suite.matrix is not None:
        raise UserError("this suite has a matrix: simulator.compare(suite) runs every cell")
    check_environment(plan.suite)
    preflight(plan.suite)  # what `validate` checks: the bot's factory or URL, models, prompt, vocabulary
    session = await run_suite(plan.suite, plan.scenarios, options, plan.bots)
    return Result(Path(session.folder), session)


@checked("run", options=fresh_options(resumes=True))
async def arun(
    suite: Suite | str | Path | None = None,
    *,
    bot: Any = None,
    scenarios: Sequence[Any] | None = None,
    scenario_ids: Collection[str] | None = None,
    tags: list[str] | None = None,
    user_model: str | None = None,
    judge_model: str | None = None,
    runs: int | None = None,
    concurrency: int | None = None,
    seed: int | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    options: RunOptions | None = None,
) -> Result:
    """Run a suite and return its Result (rates, intervals, verdicts, conversations, the run folder).

    `suite`: a suite file, a Suite, or None (then give `scenarios` and `bot`). `bot`: a function
    text -> str | list[str] | Reply (sync or async), an object with send(text) (optionally final_state()),
    a class or factory, 'module:factory', a model name for the suite's chat bot, or a bot config; default
    the suite's bot. `scenarios`: scenarios given in code (Scenario models, mappings or files) instead of
    the suite's files. `out`: the run folder (default runs/<run-id>). `options`: the engine's knobs
    (engine.runner.RunOptions: max_errors, shard, ...)."""
    plan = prepare(
        suite,
        bot=bot,
        scenarios=scenarios,
        scenario_ids=scenario_ids,
        tags=tags,
        user_model=user_model,
        judge_model=judge_model,
        runs=runs,
        concurrency=concurrency,
        seed=seed,
    )
    chosen = _options(options, out, progress)
    if chosen.resume:
        chosen.settings_changed.update(_same_run(plan, chosen.out))
    if chosen.out is None:  # the folder the engine would pick, chosen here so that a stop can name it
        from simulator.record.folder import new_run_id

        chosen.out = Path("runs") / new_run_id(plan.suite.name)
    call = _resume_call(chosen.out, bot=plan.bots is not None, scenarios=scenarios is not None)
    with (
        in_python_words(),
        said_when_stopped(f"what finished is saved in {chosen.out}; finish it with {call}"),
    ):
        return await execute(plan, chosen)


def _resume_call(folder: Path, *, bot: bool = False, scenarios: bool = False) -> str:
    """The call that finishes the run in `folder`: `simulator.resume('OUT')`, with `bot=` and `scenarios=`
    when the run was given them in code (they live only in the program that ran it)."""
    again = (", bot=..." if bot else "") + (", scenarios=[...]" if scenarios else "")
    return f"simulator.resume({str(folder)!r}{again})"


@contextmanager
def said_when_stopped(words: str) -> Iterator[None]:
    """A stop (Ctrl-C: the run's cancellation) goes on as it is, with `words` noted on it: what is kept and
    the call that finishes the run. `run` and `resume` raise KeyboardInterrupt with the note (eventloop.py),
    so Python's report of it ends with them, as the command line's stop line does."""
    try:
        yield
    except asyncio.CancelledError as exc:
        _note_stop(exc, words)
        raise


def _note_stop(stop: BaseException, words: str) -> None:
    stop.add_note(f"interrupted: {words}")


@contextmanager
def in_python_words() -> Iterator[None]:
    """A taken folder's fix said for a Python caller (`out=`, `simulator.resume`), not the command line's."""
    try:
        yield
    except FolderTaken as exc:
        raise exc.in_python(_finishable(Path(exc.path))) from None


def _finishable(path: Path) -> bool:
    """Whether `simulator.resume(path)` can finish the run (or matrix) there: its scenarios are in files."""
    from simulator.record.folder import RunFolder
    from simulator.record.index import is_matrix, read_index

    try:
        if is_matrix(path):
            path = path / read_index(path).cells[0].folder
        return RunFolder.open(path).read_manifest().scenarios_in_files()
    except (UserError, IndexError):  # not a readable run: only another out= is advice that works
        return False


def _same_run(plan: Plan, folder: Path | None) -> dict[str, list[Any]]:
    """`options.resume` finishes the run in `options.out` with this call's suite and scenarios, compared as
    `simulator run SUITE --resume` compares them (engine/operational.py: by meaning, never as written): it
    may change how calls are made (returned, {path: [old, new]}, for the manifest), and is refused, naming
    what differs, when the run was made from another suite or other scenarios it would mix in."""
    from simulator.api.folders import adopt_operational
    from simulator.record.folder import RunFolder

    if folder is None:
        raise UserError("simulator.run: options.resume=True needs options.out, the run folder to finish")
    manifest = RunFolder.open(folder).read_manifest()
    fix = "start a new run (options.resume=False and another out)."
    if _finishable(folder):
        fix = f"Finish that run as it began with simulator.resume({str(folder)!r}), or {fix}"
    else:
        fix = fix[0].upper() + fix[1:]
    where = f"simulator.run: options.resume=True with options.out={str(folder)!r} names a run made from"
    if manifest.suite is None:
        raise UserError(f"{where} no recorded suite, not this suite '{plan.suite.name}'. {fix}")
    recorded = manifest.rebuild_suite(folder, to_run=False)
    changed = adopt_operational(
        recorded,
        plan.suite,
        f"{where} another suite",
        manifest.setting_files,
        cell=manifest.matrix_cell,
        fix=fix,
    )
    differences = _other_scenarios(manifest, plan.scenarios)
    if differences:
        raise UserError(f"{where} other scenarios: {'; '.join(differences)}. {fix}")
    return changed


def _other_scenarios(manifest: Manifest, given: Sequence[Scenario]) -> list[str]:
    """How `given` differs from the run's recorded scenarios: ids it lacks or adds, content that changed
    (a scenario compared by what the manifest records of it: its file's content, or its own)."""
    from simulator.record.recorded import scenario_file_hashes, scenario_hash

    files = scenario_file_hashes(given)
    mine = {s.id: scenario_hash(s, files) for s in given}
    recorded = {entry.id: entry.sha256 for entry in manifest.scenarios}
    changed = sorted(i for i in mine.keys() & recorded.keys() if recorded[i] and recorded[i] != mine[i])
    return [
        f"{what}: {', '.join(ids[:5])}{f' and {len(ids) - 5} more' if len(ids) > 5 else ''}"
        for what, ids in (
            ("scenarios of that run not given", sorted(recorded.keys() - mine.keys())),
            ("scenarios that run did not run", sorted(mine.keys() - recorded.keys())),
            ("scenarios whose content is not the run's (a file or a scenario changed)", changed),
        )
        if ids
    ]


def run(*suite: Suite | str | Path | None, **choices: Any) -> Result:
    """`arun` from sync code (a script, a test, a Jupyter cell): the same arguments (checked by `arun`'s
    door, api/door.py), the same Result."""
    return run_sync(arun(*suite, **choices))


def _a_suite(value: Any) -> str | None:
    """The door's rule for `suite=`: None, a suite file path, or a Suite."""
    from simulator.config.suite import Suite

    return None if value is None or isinstance(value, str | Path | Suite) else "a suite file path or a Suite"


@checked(
    "resume",
    folder=lambda value: FOLDER(value) if value is not None else "a run folder path (str or Path)",
    retry_errors=of(bool, "True or False"),
    adjust=lambda value: None if value is None or callable(value) else "a function of the suite",
    suite=lambda value: _a_suite(value),
)
async def aresume(
    folder: str | Path,
    *,
    bot: Any = None,
    scenarios: Sequence[Any] | None = None,
    retry_errors: bool = False,
    progress: bool | None = None,
    options: RunOptions | None = None,
    adjust: Callable[[Suite], dict[str, list[Any]]] | None = None,
    suite: Suite | str | Path | None = None,
) -> Result | Comparison:
    """Finish an interrupted run folder (or matrix folder): only what it lacks runs; `retry_errors` runs
    errored conversations and judgements again. `suite` (a suite file or Suite, as `simulator run SUITE
    --resume`): take its operational settings (rpm, concurrency, timeouts...; engine/operational.py), and
    refuse any other difference. `adjust` may change the suite's operational settings too (for a matrix,
    each cell's) and returns what it changed; both are recorded in the manifest. `bot`: the bot given in
    code when it started (a run whose bot was a Python object); for a matrix, a mapping of bot variant id to
    bot. `scenarios`: the scenarios given in code when it started, the same ones (others are refused). A
    `--workers` run stopped before its shards were merged finishes as `simulator run --resume` finishes it
    (`_resume_workers`)."""
    from simulator.api.folders import workers_staging
    from simulator.api.plan import inline_scenarios

    path = Path(folder)
    chosen = _options(options, path, progress)
    chosen.resume, chosen.retry_errors = True, retry_errors
    if workers_staging(path) is not None:
        given_now = {"bot": bot, "scenarios": scenarios, "adjust": adjust, "suite": suite}
        return await _resume_workers(path, chosen, given_now)
    given = inline_scenarios(scenarios) if scenarios is not None else None
    changes = _ResumeChanges(suite, adjust)
    call = _resume_call(path, bot=bot is not None, scenarios=scenarios is not None)
    with said_when_stopped(f"what finished is saved in {path}; finish it with {call}"):
        return await _resume_folder(path, chosen, bot, given, changes)


async def _resume_folder(
    path: Path, chosen: RunOptions, bot: Any, given: list[Scenario] | None, changes: _ResumeChanges
) -> Result | Comparison:
    """Finish the run (or matrix) folder `path`: only what it lacks runs, with what the resume changes."""
    from simulator.engine.matrix import resume_matrix
    from simulator.record.folder import RunFolder
    from simulator.record.index import is_matrix
    from simulator.record.recorded import resumed_scenarios

    if is_matrix(path):
        from simulator.api.folders import refuse_new_cells
        from simulator.api.plan import cell_bots
        from simulator.record.index import read_index

        if changes.suite is not None:
            refuse_new_cells(changes.suite, [c.id for c in read_index(path).cells], changes.where)
        matrix = await resume_matrix(path, chosen, cell_bots(bot, path), given, changes)
        return Comparison(path, {c: Result(Path(r.folder), r) for c, r in matrix.results.items()})
    run_folder = RunFolder.open(path)
    run_folder.check_resumable()
    manifest = run_folder.read_manifest()
    recorded = manifest.rebuild_suite(path)
    chosen.settings_changed.update(changes(recorded, manifest))
    found = resumed_scenarios(manifest, recorded, path, given)
    factory = None
    if bot is not None:
        from simulator.api.plan import resolve_bot

        _, factory = resolve_bot(bot, recorded)
    # The run's own scenarios (variants included), from the files it recorded (checked by hash, never a
    # tree found from today's working directory) or given again in code, whatever the tags were.
    return await execute(Plan(recorded, found, factory), chosen)


class _ResumeChanges:
    """What a resume changes in a run's (or each matrix cell's) rebuilt suite: the operational settings of
    the suite given (anything else that differs is refused), then `adjust`'s; {path: [old, new]}."""

    def __init__(self, suite: Suite | str | Path | None, adjust: Callable[[Suite], Any] | None) -> None:
        from simulator.api.plan import load_suite

        self.adjust = adjust
        self.suite = load_suite(suite) if isinstance(suite, str | Path) else suite
        shown = suite if isinstance(suite, str | Path) else self.suite.file if self.suite else None
        self.where = str(shown) if shown is not None else "simulator.resume: suite="

    def __call__(self, recorded: Suite, manifest: Manifest) -> dict[str, list[Any]]:
        from simulator.api.folders import adopt_operational

        changed: dict[str, list[Any]] = {}
        if self.suite is not None:
            cell = manifest.matrix_cell
            files = manifest.setting_files
            changed.update(adopt_operational(recorded, self.suite, self.where, files, cell=cell))
        if self.adjust is not None:
            changed.update(self.adjust(recorded))
        return changed


async def _resume_workers(path: Path, options: RunOptions, given: dict[str, Any]) -> Result:
    """Finish a `--workers` run into `path` stopped before its shards were merged, by the command line's own
    code (engine/local_workers.py): each unfinished shard in a worker process, then the merge into `path`.
    The workers rebuild the bot, scenarios and limits each shard recorded, so nothing given may change them."""
    from simulator.api.folders import resume_local_workers, stopped_words

    changing = [f"{name}=" for name, value in given.items() if value is not None]
    if options.backend is not None:
        changing.append("options.backend")
    if changing:
        raise UserError(
            f"simulator.resume: {path} is a --workers run not yet merged: it resumes with what it began with, "
            f"so leave out {', '.join(changing)} (simulator.resume({str(path)!r}))"
        )
    # In a thread: the workers fork from a thread with no event loop running (each starts its own), and
    # this loop stays free while they run.
    work = asyncio.ensure_future(asyncio.to_thread(resume_local_workers, path, options))
    try:
        merged = await asyncio.shield(work)
    except asyncio.CancelledError as exc:
        # Ctrl-C reaches the workers too: each saves what it finished, then ends (an exit the thread reports
        # as failed workers, seen here). Once they all have, the note says what is so.
        await asyncio.wait({work})
        merged_anyway = work.exception() is None  # the last worker finished as the stop came
        said = f"the run finished as it was stopped: merged into {path}"
        _note_stop(exc, said if merged_anyway else stopped_words(path, _resume_call(path)))
        raise
    return Result(merged.folder)  # no session of its own: the shards' sessions are merged into the record


def resume(*folder: str | Path, **choices: Any) -> Result | Comparison:
    """`aresume` from sync code (the same arguments, checked at `aresume`'s door)."""
    return run_sync(aresume(*folder, **choices))


async def atalk(suite: Suite, scenario: Scenario, user: SimulatedUser, user_model: str, out: Path) -> Result:
    """One conversation of `scenario` with a user the caller supplies (a person at the desk), saved and
    judged as the run folder `out`."""
    from simulator.config.suite import check_environment
    from simulator.engine.live import run_live

    check_environment(suite)
    session = await run_live(suite, scenario, user, user_model, out)
    return Result(Path(session.folder), session)
