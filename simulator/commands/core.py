"""`run`, `validate`, `show` and `schema`: the core engine's commands."""

from __future__ import annotations

import argparse
import gc
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.commands.outputs import at_least_one, not_empty, tag_list
from simulator.errors import UserError
from simulator.plural import noun, plural
from simulator.visible import echo, echo_json

if TYPE_CHECKING:
    from simulator.api import Comparison, Plan
    from simulator.api.folders import MergeResult
    from simulator.api.options import RunOptions, RunResult
    from simulator.config.scenario import Scenario
    from simulator.config.suite import Suite

# `simulator run` exit codes besides 0 (done), 2 (a user mistake) and 130 (interrupted): documented in README.
EXIT_NOTHING_JUDGED = 3  # every conversation of the session errored, so nothing could be judged


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser("run", help="run a suite: simulate every scenario, judge every conversation")
    run.add_argument("suite", type=Path, nargs="?", help="the suite file (suite.yaml)")
    run.add_argument("--runs", type=at_least_one, help="repeats per scenario (overrides the suite)")
    run.add_argument("--concurrency", type=at_least_one, help="conversations in flight (overrides the suite)")
    run.add_argument("--out", type=Path, help="the run folder to write (default runs/<run-id>)")
    run.add_argument("--tags", type=tag_list, help="only scenarios with any of these comma-separated tags")
    run.add_argument(
        "--user-model", type=not_empty, help="simulated-user model, e.g. offline, anthropic:claude-sonnet-4-5"
    )
    run.add_argument(
        "--judge-model", type=not_empty, help="judge model for LLM criteria (overrides the suite)"
    )
    run.add_argument("--seed", type=int, help="seed for the offline user (overrides the suite)")
    run.add_argument(
        "--resume",
        type=Path,
        metavar="RUN",
        help="finish an interrupted run folder (with a suite file: take its rpm, tpm, connections, "
        "concurrency, timeouts and retry budgets; anything else that differs is refused)",
    )
    run.add_argument(
        "--rpm",
        action="append",
        metavar="[PROVIDER=]N",
        help="requests per minute to each provider the run uses (or to one); also with --resume",
    )
    run.add_argument("--tpm", action="append", metavar="[PROVIDER=]N", help="tokens per minute, as --rpm")
    run.add_argument(
        "--retry-errors", action="store_true", help="with --resume: re-run errored conversations"
    )
    run.add_argument(
        "--max-errors",
        type=_max_errors,
        help="abort when more than this many (10), or this share (5%%), of items fail; `off` never "
        "(default: abort after 10 failures in a row)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    _scale_arguments(run)
    run.add_argument(
        "--include-drafts", action="store_true", help="also run scenarios marked draft: true (unreviewed)"
    )
    run.set_defaults(handler=cmd_run, on_interrupt=_resume_hint)
    _other_commands(subparsers)


def _scale_arguments(run: argparse.ArgumentParser) -> None:
    """Where a run's conversations go: shards, local worker processes, a Ray cluster."""
    run.add_argument("--shard", metavar="I/K", help="run only the i-th of K disjoint parts of the plan")
    run.add_argument(
        "--backend", choices=["local", "ray"], default="local", help="where conversations run (default local)"
    )
    run.add_argument(
        "--address", help="with --backend ray: the cluster (auto, ray://host:10001); default: start one"
    )
    run.add_argument(
        "--workers",
        metavar="N|auto",
        help="local: worker processes for this run, one record (auto: the cores); with --backend ray: worker "
        "actors (default: the cluster's CPUs)",
    )


def _other_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = subparsers.add_parser("validate", help="check scenario, suite and judge files without running")
    validate.add_argument("paths", type=Path, nargs="+", help="files or folders")
    validate.set_defaults(handler=cmd_validate)

    show = subparsers.add_parser("show", help="print a readable transcript from a run")
    show.add_argument("run", type=Path, help="runs/<run-id>")
    show.add_argument("--scenario", help="scenario id (default: every conversation)")
    show.add_argument("--repeat", type=int, help="repeat index")
    show.add_argument("--raw", action="store_true", help="print the records as JSON lines")
    show.add_argument(
        "--all",
        dest="show_all",
        action="store_true",
        help="list every verdict (default: what failed or errored in full, the rest as counts)",
    )
    show.set_defaults(handler=cmd_show)

    schema = subparsers.add_parser("schema", help="print the JSON schema of a file format, for editors")
    schema.add_argument(
        "kind", nargs="?", default="scenario", choices=["scenario", "suite", "criterion", "golden", "hazards"]
    )
    schema.set_defaults(handler=cmd_schema)


def _resume_hint(args: argparse.Namespace) -> str:
    """What finishes a stopped `run` (the folder it named, when the command line named one)."""
    return f"finish it with: simulator run --resume {args.resume or args.out or 'RUN'}"


def _max_errors(value: str) -> float:
    from simulator.api.options import parse_max_errors

    try:
        return parse_max_errors(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if args.runs is not None:
        overrides["runs"] = args.runs
    if args.concurrency is not None:
        overrides["concurrency"] = args.concurrency
    if args.seed is not None:
        overrides["seed"] = args.seed
    return overrides


def cmd_run(args: argparse.Namespace) -> int:
    """Plan and run through the Python API (simulator.api), then print the one-screen summary.

    The garbage collector is off while the process starts: imports and the suite make ~10^5 objects that
    all live on (modules, the SDK's types, schemas), so collecting among them finds nothing and cost about
    a tenth of start-up's CPU. The run freezes that heap and turns the collector back on for its own
    short-lived objects (`eventloop.py: frozen_heap`)."""
    gc.disable()
    try:
        return _run_command(args)
    finally:
        gc.enable()


def _run_command(args: argparse.Namespace) -> int:
    from simulator import api

    if args.resume is not None:
        from simulator.api.folders import workers_staging
        from simulator.record.index import is_matrix

        if workers_staging(args.resume) is not None:
            return _resume_local_workers(args)

        matrix = is_matrix(args.resume)
        options = _run_options(args, backend=not matrix)
        outcome = api.run_sync(
            api.aresume(
                args.resume,
                retry_errors=args.retry_errors,
                options=options,
                adjust=lambda suite: _resume_changes(args, suite),
                suite=args.suite,
            )
        )
        if isinstance(outcome, api.Comparison):
            return _print_matrix(outcome)
        return _print_run(outcome.session)
    plan = _new_plan(args)
    if args.backend == "local" and args.workers is not None and plan.suite.matrix is None:
        from simulator.api.options import CONVERSATIONS_PER_WORKER, parse_workers

        planned = len(plan.scenarios) * plan.suite.runs
        workers = parse_workers(args.workers, planned=planned)
        if args.workers != "auto" or workers > 1:  # auto on a small run: one process, no fork
            options = _run_options(args, backend=False)
            return _run_local_workers(args, plan.suite, plan.scenarios, options, workers)
        echo(
            f"--workers auto: one process for {plural(planned, 'conversation')} (a worker pays from "
            f"{plural(CONVERSATIONS_PER_WORKER, 'conversation')} each: docs/performance.md)"
        )
    if plan.suite.matrix is not None:
        return _print_matrix(api.run_sync(api.execute_matrix(plan, _run_options(args, backend=False))))
    options = _run_options(args, backend=True)
    from simulator.api.options import parse_shard

    options.shard = parse_shard(args.shard) if args.shard else None
    return _print_run(api.run_sync(api.execute(plan, options)).session)


def _run_local_workers(
    args: argparse.Namespace, suite: Suite, scenarios: list[Scenario], options: RunOptions, workers: int
) -> int:
    """`--workers N|auto` on the local backend: N forked shard processes merged into one run folder."""
    from simulator.api.folders import run_local_workers
    from simulator.record.folder import new_run_id

    if args.resume is not None or args.shard:
        raise UserError("--workers starts a new run: run it without --resume or --shard")
    out = args.out or Path("runs") / new_run_id(suite.name)
    merged = run_local_workers(suite, scenarios, options, workers, out)
    return _print_merged(merged, f"{workers} worker processes, merged into one record")


def _print_merged(merged: MergeResult, how: str) -> int:
    """The summary of a `--workers` run (or its resume), merged into one record."""
    from simulator.record.counting import fidelity_text
    from simulator.record.folder import RunFolder

    counts = RunFolder.open(merged.folder).read_manifest().counts
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(counts.stop_reasons.items())) or "none"
    echo(
        f"run complete: {plural(merged.conversations, 'conversation')} ({reasons}); {plural(merged.verdicts, 'verdict')}"
        f"{fidelity_text(merged.fidelity_checks)}; {how}"
    )
    echo(f"run folder: {merged.folder}")
    echo(f"next: simulator report {merged.folder}   ·   simulator show {merged.folder} --scenario ID")
    return 0


def _resume_local_workers(args: argparse.Namespace) -> int:
    """`--resume OUT` of a `--workers` run stopped before its shards were merged: finish them, then merge."""
    from simulator.api.folders import resume_local_workers

    given = [flag for flag, value in {**_RESULT_FLAGS, **_RATE_FLAGS}.items() if getattr(args, value)]
    if given or args.suite is not None:
        shown = ", ".join(given) or str(args.suite)
        raise UserError(
            f"{args.resume} is a --workers run not yet merged: it resumes with the settings it began with, "
            f"so leave out {shown} (`simulator run --resume {args.resume}`)"
        )
    if args.backend != "local":
        raise UserError(f"{args.resume} is a --workers run: resume it without --backend ray")
    options = _run_options(args, backend=False)
    options.retry_errors = args.retry_errors
    merged = resume_local_workers(args.resume, options)
    return _print_merged(merged, "the workers' shards finished and merged into one record")


def _run_options(args: argparse.Namespace, backend: bool) -> RunOptions:
    """The engine's knobs from the command line (`backend`: whether --backend applies to this run)."""
    from simulator.api.options import RayBackendOptions, RunOptions

    options = RunOptions(
        out=args.resume or args.out,
        progress=not args.no_progress,
        max_errors=args.max_errors,
        freeze_gc=True,
    )
    if backend and args.backend == "ray":
        options.backend = RayBackendOptions(args.address, args.workers)
    return options


def _resume_changes(args: argparse.Namespace, suite: Suite) -> dict[str, list[Any]]:
    """The operational settings a resume changes from --concurrency, --rpm, --tpm (after the suite file's,
    taken by `simulator.resume(..., suite=)`), applied to `suite` (a run's, or each matrix cell's); anything
    that would change results is refused."""
    from simulator.api.folders import apply_rate_overrides

    given = [flag for flag, value in _RESULT_FLAGS.items() if getattr(args, value)]
    if given:
        raise UserError(
            f"--resume finishes the run as it began: {', '.join(given)} would change its results; "
            "start a new run for that (resume takes --concurrency, --rpm, --tpm or a suite file)"
        )
    changed: dict[str, list[Any]] = {}
    if args.concurrency is not None and args.concurrency != suite.concurrency:
        changed["concurrency"] = [suite.concurrency, args.concurrency]
        suite.concurrency = args.concurrency
    overrides = {"rpm": args.rpm or [], "tpm": args.tpm or []}
    changed.update(apply_rate_overrides(suite, overrides, _providers_used(suite)))
    return changed


_RESULT_FLAGS = {
    "--runs": "runs",
    "--tags": "tags",
    "--user-model": "user_model",
    "--judge-model": "judge_model",
    "--seed": "seed",
    "--shard": "shard",
    "--include-drafts": "include_drafts",
}
_RATE_FLAGS = {"--rpm": "rpm", "--tpm": "tpm", "--concurrency": "concurrency"}


def _providers_used(suite: Suite) -> set[str]:
    """The providers a suite's models name (`provider:model`), and those it configures."""
    from simulator.config.bot_kinds import engine_model

    models = [*suite.user.model_list(), suite.judges.model, *suite.judges.models, suite.user.fidelity.model]
    models.append(engine_model(suite.bot))  # a bot played by a model this engine calls
    return {m.split(":", 1)[0] for m in models if m and ":" in m} | set(suite.providers)


def _new_plan(args: argparse.Namespace) -> Plan:
    """A new run: the suite file with the command line's choices, and the scenarios it runs."""
    from simulator.api import prepare

    if args.retry_errors:
        raise UserError("--retry-errors works with --resume: simulator run --resume runs/<id> --retry-errors")
    if args.suite is None:
        raise UserError("name a suite file: simulator run scenarios/triage/suite.yaml")
    plan = prepare(
        args.suite,
        tags=args.tags,
        user_model=args.user_model,
        judge_model=args.judge_model,
        include_drafts=args.include_drafts,
        **_overrides(args),
    )
    if args.rpm or args.tpm:
        from simulator.api.folders import apply_rate_overrides

        overrides = {"rpm": args.rpm or [], "tpm": args.tpm or []}
        apply_rate_overrides(plan.suite, overrides, _providers_used(plan.suite))
    return plan


def _print_run(result: RunResult | None) -> int:
    """The run's one-screen summary (counts, calls per model, the folder, what next); the exit code."""
    from simulator.record.counting import fidelity_text

    assert result is not None
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(result.stop_reasons.items())) or "none"
    echo(
        f"run {result.status}: {plural(result.finished, 'conversation')} ({reasons}); {plural(result.errors, 'error')}; "
        f"{result.skipped} already done; {plural(result.verdicts, 'verdict')}"
        + (f" ({plural(result.judge_errors, 'error')})" if result.judge_errors else "")
        + fidelity_text(result.fidelity_checks)
    )
    calls = {name: c for name, c in result.calls.items() if c["attempts"] or c["cache_hits"]}
    for name, c in sorted(calls.items()):
        hits = sum(c["cache_hits"].values())
        echo(
            f"{name}: {c['attempts']} calls, {c['retries']} retries ({c['rate_limits']} rate limited), "
            f"{c['failed']} failed" + (f", {hits} cache hits" if hits else "")
        )
    echo(f"run folder: {result.folder}")
    if result.judged_nothing:
        echo(
            f"nothing could be judged: all {plural(result.finished, 'conversation')} ended in an error (exit code "
            f"{EXIT_NOTHING_JUDGED}); see the causes with: simulator show {result.folder}"
        )
        return EXIT_NOTHING_JUDGED
    echo(f"next: simulator report {result.folder}   ·   simulator show {result.folder} --scenario ID")
    return 0


def _print_matrix(matrix: Comparison) -> int:
    """A matrix run's summary: one line per cell, the folder, what next; a UserError when cells aborted."""
    from simulator.record.counting import fidelity_text

    for cell, outcome in matrix.results.items():
        result = outcome.session
        assert result is not None
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(result.stop_reasons.items())) or "none"
        echo(
            f"cell {cell}: {result.status}: {plural(result.finished, 'conversation')} ({reasons}); "
            f"{plural(result.errors, 'error')}; {result.skipped} already done; {plural(result.verdicts, 'verdict')}"
            f"{fidelity_text(result.fidelity_checks)}"
        )
    echo(f"matrix folder: {matrix.path} ({len(matrix.results)} cells, index {matrix.path / 'index.json'})")
    if matrix.aborted:
        stopped = "; ".join(f"{cell}: {reason}" for cell, reason in matrix.aborted.items())
        raise UserError(
            f"matrix cells aborted ({stopped}). Fix the cause, then finish them with: "
            f"simulator run --resume {matrix.path} --retry-errors"
        )
    echo(f"next: simulator report {matrix.path}   ·   simulator report {matrix.path} --html leaderboard.html")
    return 0


def _file_kind(path: Path, default: str = "scenario", *, named: bool = False) -> str:
    """Whether a YAML file holds a suite, criteria or scenarios, by its content whatever its name (unreadable
    files, and files whose keys say nothing, go to the `default` loader, which reports why). A file whose
    content says nothing (empty, only comments, no `bot:` yet) that the user named as `suite*.yaml` is the
    suite it is meant to be: its problems are a suite's, never "write a scenario"."""
    from simulator.config.kinds import document_kind
    from simulator.config.yamlfile import YAMLProblem, load_yaml

    try:
        data = load_yaml(path).data
    except YAMLProblem:
        return default
    kind = document_kind(data, "")
    if kind:
        return kind
    return "suite" if named and path.name.lower().startswith("suite") else default


def _validate_files(path: Path, named: bool = True) -> list[Path]:
    """The files `validate PATH` checks: a folder's YAML and CSV files, or the file; a FIFO or a device is
    refused without being read. A folder a suite names may be empty (a new suite's scenarios/); one the
    user named may not."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".csv"))
        if (
            not found and named
        ):  # checking nothing is no pass: say so (a folder named suite.yaml, an empty one)
            raise UserError(f"{path}: a folder with no .yaml, .yml or .csv files in it; nothing to validate")
        return found
    if path.is_file():
        return [path]
    if path.exists() or path.is_symlink():  # a FIFO, a device, a link loop: say what it is
        from simulator.safefiles import FileRefused, open_regular

        try:
            open_regular(path).close()
        except FileRefused as exc:
            raise UserError(f"{path}: {exc}") from None
    raise UserError(f"{path}: no such file or folder")


def _suite_problems(suite: Any, known: list[Any], notes: dict[str, list[str]]) -> list[Any]:
    """What `run` would refuse of a suite, the offline user's languages (docs/languages.md) and the
    mistakes only the suite as a whole shows (docs/authoring.md), less problems already found; the
    writer's notes (a criterion that never applies) are gathered into `notes`."""
    from simulator.api.checks import preflight_problems, suite_language_problems, writer_findings

    # A folder the suite names that is not there, at its line (`new suite` checks its suite before it makes
    # the folders, so this is not preflight's); `run` refuses it reading the folder (Suite.named_paths).
    found = suite.missing_paths("scenarios") + suite.missing_paths("judges") + preflight_problems(suite)
    found = found or suite_language_problems(suite)  # needs a vocabulary that loads
    writer = writer_findings(suite)
    found += [p for p in writer.problems if str(p) not in {str(q) for q in known}]
    for what, where in writer.notes:
        notes.setdefault(what, []).append(where)
    return found


def _load_each(files: dict[str, list[Path]], problems: list[Any], summary: list[str]) -> None:
    """Load every golden set, data file, scenario and criterion `validate` found, adding what each says to
    `problems` (mistakes) or `summary` (what was fine)."""
    from simulator.api.checks import DATA_LOADERS
    from simulator.config.golden import load_golden
    from simulator.config.loading import load_scenarios
    from simulator.errors import Problem
    from simulator.judging.criteria import load_criteria

    for path in files["golden"]:
        try:
            summary.append(f"golden set {path}: {len(load_golden(path))} items ok")
        except UserError as exc:
            problems += exc.problems or [Problem(str(path), str(exc))]
    for kind, load in DATA_LOADERS.items():
        for path in files[kind]:
            try:
                load(path)
                summary.append(f"{kind} {path}: ok")
            except UserError as exc:
                problems += exc.problems or [Problem(str(path), str(exc))]
    for kind, label, loader in (
        ("scenario", "scenarios", load_scenarios),
        ("criterion", "criteria", load_criteria),
    ):
        paths = files[kind]
        if not paths:
            continue
        try:
            loaded = loader(paths)
            if kind == "scenario":
                from simulator.api.checks import file_name_problems

                named = [p for p in file_name_problems(loaded) if str(p) not in {str(q) for q in problems}]
                problems += named
            drafts = sum(bool(getattr(d, "draft", False)) for d in loaded)
            note = f" ({plural(drafts, 'draft')}: `run` refuses them until reviewed)" if drafts else ""
            summary.append(f"{len(loaded)} {noun(len(loaded), kind, label)}: ok{note}")
        except UserError as exc:
            problems += exc.problems or [Problem(", ".join(map(str, paths)), str(exc))]


def cmd_validate(args: argparse.Namespace) -> int:
    from simulator.config.documents import file_identity
    from simulator.config.suite import load_suite
    from simulator.errors import Problem
    from simulator.readers import missing

    problems: list[Problem] = []
    files: dict[str, list[Path]] = {"suite": [], "criterion": [], "scenario": [], "golden": []}
    from simulator.api.checks import DATA_LOADERS

    files.update({kind: [] for kind in DATA_LOADERS})
    summary: list[str] = []
    notes: dict[str, list[str]] = {}
    # (path, how a suite named it): a suite file inside another suite's folders is ignored by `run` of that
    # suite, so `validate` of it ignores it too (it is checked when named itself). A suite's judges paths
    # are read as criteria, as `run` reads them; anything else there is the suite's problem (preflight).
    pending: list[tuple[Path, str]] = [(p, "") for p in args.paths]
    seen: set[Path] = set()
    while pending:
        path, via_suite = pending.pop(0)
        for file in _validate_files(path, named=not via_suite):
            if file.suffix == ".csv":
                files["golden"].append(file)
                continue
            if file_identity(file) in seen:
                continue  # named twice (a folder and a suite pointing into it): check once
            kind = _file_kind(file, "criterion" if via_suite == "judges" else "scenario", named=not via_suite)
            if (via_suite and kind == "suite") or (via_suite == "judges" and kind != "criterion"):
                continue
            seen.add(file_identity(file))
            files[kind].append(file)
            if kind != "suite":
                continue
            try:
                suite = load_suite(file)
            except UserError as exc:
                problems += exc.problems or [Problem(str(file), str(exc))]
                continue
            found = _suite_problems(suite, problems, notes)
            problems += found
            summary += [] if found else [f"suite {file}: ok"]
            for field in ("scenarios", "judges"):  # a path that reaches nothing is a problem of preflight's
                named = [suite.resolve(p) for p in getattr(suite, field).paths]
                pending += [(path, field) for path in named if not missing(path)]
    _load_each(files, problems, summary)
    if problems:
        raise UserError("validation failed", problems)
    summary += [f"note: {what} never applies: no scenario has those tags in {', '.join(where)}"
                for what, where in notes.items()]  # fmt: skip
    echo("\n".join(summary))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from simulator.record.folder import RunFolder, latest_by_id
    from simulator.record.selection import select_verdicts
    from simulator.report.show import render_conversation
    from simulator.visible import terminal_console

    folder = RunFolder.open(args.run)
    folder.read_manifest()  # a damaged manifest is one clear error, not a transcript shown as if all is well
    records = list(latest_by_id(folder.conversations()).values())
    if args.scenario:
        exact = [r for r in records if r.scenario_id == args.scenario]
        # A base id shows its variants (persona factors, several simulated users: `id~simulator=...`).
        records = exact or [r for r in records if r.scenario_id.startswith(f"{args.scenario}~")]
        if not records:
            raise UserError(f"no conversation of scenario '{args.scenario}' in {args.run}")
    if args.repeat is not None:
        repeats = sorted({r.repeat for r in records})
        records = [r for r in records if r.repeat == args.repeat]
        if not records:
            which = f"scenario '{args.scenario}'" if args.scenario else "this run"
            raise UserError(
                f"--repeat {args.repeat}: {which} has no such repeat; its repeats are "
                f"{_ranges(repeats) or 'none'} (counted from 0)"
            )
    selection = select_verdicts(folder)  # the verdicts `simulator report` counts (record/selection.py)
    verdicts: dict[str, list[Any]] = {}
    for verdict in [*selection.verdicts, *selection.fidelity]:
        verdicts.setdefault(verdict.conversation_id, []).append(verdict)
    if args.raw:
        for record in records:
            echo_json(record.model_dump_json())
        return 0
    console = terminal_console()
    from rich.markup import escape

    from simulator.analysis.calls import limit_lines

    for line in limit_lines(folder.read_manifest()):  # the pace each provider settled on
        console.print(f"[dim]limits: {escape(line)}[/dim]")
    for record in records:
        render_conversation(console, record, verdicts.get(record.id, []), args.show_all)
    return 0


def _ranges(numbers: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    parts: list[str] = []
    for number in numbers:
        if parts and number == int(parts[-1].split("-")[-1]) + 1:
            parts[-1] = f"{parts[-1].split('-')[0]}-{number}"
        else:
            parts.append(str(number))
    return ", ".join(parts)


def cmd_schema(args: argparse.Namespace) -> int:
    from simulator.config.schemas import json_schema

    echo_json(json.dumps(json_schema(args.kind), indent=2))
    return 0
