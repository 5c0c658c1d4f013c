"""`judge` and `judge-pairwise`: judge a stored run again, and compare two runs' bots criterion by criterion."""

from __future__ import annotations

__all__ = ["imported_scenarios", "register", "stored_scenarios", "stored_suite", "verdict_rows"]

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.commands.outputs import at_least_one, write_output
from simulator.errors import UserError

if TYPE_CHECKING:  # imported where used, so `simulator --help` loads none of them
    from simulator.judging.criteria import Criterion
    from simulator.record.folder import RunFolder
    from simulator.record.manifest import Manifest
    from simulator.record.models import ConversationRecord, Verdict
    from simulator.spec.scenario import Scenario
    from simulator.spec.suite import Suite


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    judge = subparsers.add_parser(
        "judge", help="judge a stored run again (changed criteria or judge model) without re-simulating"
    )
    judge.add_argument("run", type=Path, help="runs/<run-id>")
    judge.add_argument(
        "--suite", type=Path, help="take the judges and providers sections from this suite file instead"
    )
    _judge_options(judge)
    judge.add_argument(
        "--judge-models",
        nargs="+",
        metavar="MODEL",
        help="a jury: several judge models, combined by the suite's judges.aggregate rules (default majority)",
    )
    judge.add_argument(
        "--samples",
        type=_samples,
        help="judge every (conversation, criterion) K times per judge model and report each criterion's "
        "flip rate (A/A stability); the majority counts, a tie is an error",
    )
    judge.add_argument("--retry-errors", action="store_true", help="judge again the verdicts that errored")
    judge.set_defaults(handler=cmd_judge)

    pair = subparsers.add_parser(
        "judge-pairwise", help="compare two runs' bots on the same scenarios, in both orders"
    )
    pair.add_argument("run_a", type=Path, help="the first run (bot A)")
    pair.add_argument("run_b", type=Path, help="the second run (bot B)")
    pair.add_argument("--criterion", required=True, help="the criterion id to compare on")
    _judge_options(pair)
    pair.add_argument("--out", type=Path, help="also write the results as JSON lines to this file")
    pair.set_defaults(handler=cmd_judge_pairwise)


def _samples(value: str) -> int:
    try:
        number = int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"'{value}' is not a whole number") from exc
    if not 1 <= number <= 25:
        raise argparse.ArgumentTypeError(f"--samples must be between 1 and 25, got {number}")
    return number


def _judge_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--judges",
        type=Path,
        nargs="+",
        action="extend",
        metavar="PATH",
        help="criterion files or folders (default: the suite's judges.paths)",
    )
    parser.add_argument(
        "--judge-model", help="judge model, e.g. anthropic:claude-sonnet-4-5 (default: the suite's)"
    )
    parser.add_argument(
        "--concurrency", type=at_least_one, help="conversations judged at once (default: the suite's)"
    )


def stored_suite(
    manifest: Manifest, folder: Path, given: Path | None = None, judges: list[Path] | None = None
) -> Suite:
    """The suite a run was made with, as its manifest recorded it (no need for the suite file itself). An
    imported run without a suite takes one from `given` (--suite), or a bare one when `judges` are named."""
    if manifest.kind == "imported" and manifest.suite is None:
        if given is not None:
            from simulator.spec.suite import load_suite

            return load_suite(given)
        if judges:
            from simulator.spec.suite import Suite

            return Suite.model_validate(
                {"name": manifest.run_id, "bot": IMPORTED_BOT, "user": {"model": "real"}}
            )
        raise UserError(
            f"{folder} is an imported run with no suite; pass --suite FILE, or --judges PATH --judge-model M"
        )
    return manifest.rebuild_suite(folder)


# Imported conversations were not made by a bot of ours: judging never calls it.
IMPORTED_BOT = {"type": "python", "factory": "simulator.traces:imported_conversations"}


def imported_scenarios(manifest: Manifest) -> list[Scenario]:
    """The scenarios of an imported run, from its manifest: expected values and tags as mapped on import."""
    from simulator.spec.scenario import Scenario

    return [
        Scenario(
            id=entry.id,
            persona="a real user (imported conversation)",
            goal="unknown: this conversation was imported, not simulated",
            expected=entry.expected,
            tags=entry.tags,
        )
        for entry in manifest.scenarios
    ]


def stored_scenarios(manifest: Manifest, folder: Path | None = None) -> tuple[list[Scenario], list[str]]:
    """The run's scenarios, read again from the files it recorded (absolute paths, checked by hash): a
    file that moved or changed since the run is refused, naming it (record/recorded.py)."""
    if manifest.kind == "imported":
        return imported_scenarios(manifest), []
    from simulator.record.recorded import recorded_scenarios

    if not any(entry.file for entry in manifest.scenarios):
        return [], []
    where = folder if folder is not None else Path(manifest.run_id)
    suite = manifest.rebuild_suite(where) if manifest.suite is not None else None
    return recorded_scenarios(manifest, suite, where, suite_file=False), []


def verdict_rows(verdicts: list[Verdict], samples: list[Verdict] | None = None) -> list[dict[str, Any]]:
    """Counts per criterion: results, unverified evidence, tokens (the summary `judge` prints); the tokens
    of a sampled or jury verdict are those of its `samples`."""
    rows: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        row = rows.setdefault(
            v.criterion_id,
            {
                "criterion": v.criterion_id,
                "kind": v.kind,
                "results": Counter(),
                "unverified": 0,
                "scores": [],
            },
        )
        row["results"][v.result] += 1
        row["unverified"] += v.evidence_verified is False
        if v.score is not None:
            row["scores"].append(v.score)
    for v in [*verdicts, *(samples or [])]:
        if v.usage is not None and v.criterion_id in rows:
            row = rows[v.criterion_id]
            row["input_tokens"] = row.get("input_tokens", 0) + v.usage.input_tokens
            row["cached_tokens"] = row.get("cached_tokens", 0) + v.usage.cached_input_tokens
    return list(rows.values())


def _print_table(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(
        "criterion", "kind", "pass", "fail", "n/a", "error", "not judged", "unverified", "cached/input"
    )
    for row in rows:
        counts = row["results"]
        if row["kind"] == "metric":
            scores = row["scores"]
            mean = f"mean {sum(scores) / len(scores):.3f}" if scores else ""
            table.add_row(row["criterion"], "metric", mean, "", "", "", "", "", "")
            continue
        tokens = f"{row['cached_tokens']}/{row['input_tokens']}" if "input_tokens" in row else ""
        table.add_row(
            row["criterion"],
            row["kind"],
            *(str(counts[k]) for k in ("pass", "fail", "not_applicable", "error", "not_judged")),
            str(row["unverified"]),
            tokens,
        )
    _console().print(table)


def _console() -> Any:
    """A rich console as wide as the terminal, or 140 columns when the output is a file or a pipe."""
    import shutil

    from rich.console import Console

    return Console(width=shutil.get_terminal_size((140, 24)).columns)


def _latest(verdicts: list[Verdict]) -> list[Verdict]:
    latest: dict[tuple[str, str], Verdict] = {}
    for v in verdicts:
        latest[(v.conversation_id, v.criterion_id)] = v
    return list(latest.values())


def _attach_suite(folder: RunFolder, manifest: Manifest, suite: Suite) -> None:
    """An imported run judged with --suite keeps that suite (its outcome levels give the report under- and
    over-triage), as if it had been named on import."""
    from simulator.engine.runner import redacted_suite
    from simulator.record.hashing import sha256_file

    manifest.suite = redacted_suite(suite)
    manifest.suite.runs = 1  # one record per real conversation
    manifest.suite_file = str(suite.file) if suite.file else None
    manifest.suite_hash = sha256_file(suite.file) if suite.file else None
    folder.write_manifest(manifest)


def cmd_judge(args: argparse.Namespace) -> int:
    from simulator.engine.runner import judge_run
    from simulator.eventloop import run_async
    from simulator.record.folder import RunFolder, latest_by_id
    from simulator.spec.suite import check_environment

    folder = RunFolder.resume(args.run)  # judging appends verdicts: a writer
    manifest = folder.read_manifest()
    suite = stored_suite(manifest, folder.path, args.suite, args.judges)
    if manifest.kind == "imported" and manifest.suite is None and args.suite:
        _attach_suite(folder, manifest, suite)
    if args.suite:
        from simulator.spec.suite import load_suite

        given = load_suite(args.suite)
        check_environment(given)  # before it is merged: the error names this file's line
        suite.judges = given.judges.model_copy(
            update={"paths": [str(given.resolve(p).resolve()) for p in given.judges.paths]}
        )
        suite.providers = given.providers
    if args.judges:
        suite.judges.paths = [str(p.resolve()) for p in args.judges]
    if args.judge_model:
        suite.judges.model = args.judge_model
        suite.judges.models = []
    if args.judge_models:
        if len(set(args.judge_models)) != len(args.judge_models):
            raise UserError("--judge-models lists a model twice; use --samples to judge more than once")
        suite.judges.models = list(args.judge_models)
    if args.samples:
        suite.judges.samples = args.samples
    check_environment(suite)
    scenarios, warnings = stored_scenarios(manifest, args.run)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    by_id = {s.id: s for s in scenarios}
    records = list(latest_by_id(folder.conversations()).values())
    gone = sorted({r.scenario_id for r in records} - set(by_id))
    if gone:
        print(f"warning: scenarios no longer in their files, not judged: {', '.join(gone)}", file=sys.stderr)
    records = [r for r in records if r.scenario_id in by_id]
    result, stage, todo = run_async(
        judge_run(
            folder, suite, scenarios, records, retry_errors=args.retry_errors, concurrency=args.concurrency
        )
    )
    stored = list(folder.verdicts())
    every = [v for v in stored if not v.is_sample]
    current = _latest([v for v in every if v.judge_set_hash == stage.judge_set_hash])
    samples = [v for v in stored if v.is_sample and v.judge_set_hash == stage.judge_set_hash]
    others = sum(v.judge_set_hash != stage.judge_set_hash and v.kind != "fidelity" for v in every)
    model = ", ".join(suite.judges.judge_models()) or "none (LLM criteria not judged)"
    print(f"judge set {stage.judge_set_hash[:19]}  model: {model}  criteria: {len(stage.criteria)}")
    print(
        f"judged {todo} of {len(records)} conversations ({result.verdicts} verdicts written); "
        f"{others} earlier verdicts of other judge sets kept"
    )
    _print_table(verdict_rows(current, samples))
    _print_stability(folder, stage.judge_set_hash)
    unverified = sum(v.evidence_verified is False for v in current)
    if unverified:
        print(f"{unverified} verdicts have evidence not found in the transcript (evidence_verified: false)")
    return 0


def _print_stability(folder: RunFolder, judge_set: str) -> None:
    """With samples or a jury: each criterion's flip rate, and the jury's agreement."""
    from simulator.analysis.stability import jury_rows, stability_rows

    samples = [v for v in folder.verdicts() if v.judge_set_hash == judge_set and v.is_sample]
    if not samples:
        return
    for row in stability_rows(samples):
        flag = "  UNSTABLE: read the rubric (docs/judges.md)" if row.unstable else ""
        print(f"{row.criterion_id} ({row.judge_model}, {row.samples} samples): flips {row.flips.text}{flag}")
    finals = [v for v in folder.verdicts() if v.judge_set_hash == judge_set and v.aggregate is not None]
    for jury in jury_rows(samples, finals):
        kappa = "n/a" if jury.fleiss_kappa is None else f"{jury.fleiss_kappa:.2f}"
        print(
            f"{jury.criterion_id} jury ({jury.rule}): all agree {jury.agreement.text}; Fleiss' kappa {kappa}; "
            f"{len(jury.disagreements) + jury.more_disagreements} disagreements"
        )


def cmd_judge_pairwise(args: argparse.Namespace) -> int:
    from simulator.judging.pairwise import summarise_pairs
    from simulator.record.folder import RunFolder

    folder_a, folder_b = RunFolder.open(args.run_a), RunFolder.open(args.run_b)
    suite = stored_suite(folder_a.read_manifest(), folder_a.path)
    suite_b = stored_suite(folder_b.read_manifest(), folder_b.path)
    criterion = _pairwise_criterion(args, suite)
    model = _pairwise_model(args, suite, suite_b)
    a, b, common = _common_conversations(args, folder_a, folder_b, criterion)
    results = _judge_pairs(suite, model, criterion, (a, b, common), args.concurrency)
    if args.out:
        write_output(args.out, "".join(r.model_dump_json() + "\n" for r in results))
    _print_pairs(results, summarise_pairs(results), criterion.id, model)
    return 0


def _pairwise_criterion(args: argparse.Namespace, suite: Suite) -> Criterion:
    """The criterion named by `--criterion`, from `--judges` or else the suite's judges.paths."""
    from simulator.judging.criteria import load_criteria

    paths = (
        [p.resolve() for p in args.judges] if args.judges else [suite.resolve(p) for p in suite.judges.paths]
    )
    if not paths:
        raise UserError("no criteria: pass --judges PATH, or give the suite a judges.paths")
    criteria = {c.id: c for c in load_criteria(paths)}
    criterion = criteria.get(args.criterion)
    if criterion is None:
        raise UserError(
            f"no criterion '{args.criterion}' in {', '.join(map(str, paths))}; ids: {', '.join(criteria)}"
        )
    return criterion


def _pairwise_model(args: argparse.Namespace, suite: Suite, suite_b: Suite) -> str:
    """The judge model (`--judge-model` or run A's suite), warning when it shares a family with a bot."""
    from simulator.judging.hygiene import same_family_warnings

    model = args.judge_model or suite.judges.model
    if model is None:
        raise UserError(
            "pairwise judging needs a judge model: pass --judge-model, e.g. anthropic:claude-sonnet-4-5"
        )
    bots = {"bot A": getattr(suite.bot, "model", None), "bot B": getattr(suite_b.bot, "model", None)}
    for warning in same_family_warnings(model, bots):
        print(f"warning: {warning}", file=sys.stderr)
    return str(model)


def _common_conversations(
    args: argparse.Namespace, folder_a: RunFolder, folder_b: RunFolder, criterion: Criterion
) -> tuple[dict[str, ConversationRecord], dict[str, ConversationRecord], list[str]]:
    """Each run's latest records, and the ids finished in both that the criterion applies to, sorted."""
    from simulator.record.folder import latest_by_id

    a = latest_by_id(folder_a.conversations())
    b = latest_by_id(folder_b.conversations())
    common = sorted(
        cid
        for cid in set(a) & set(b)
        if a[cid].stop_reason != "error" and b[cid].stop_reason != "error" and criterion.applies(a[cid].tags)
    )
    if not common:
        raise UserError(
            f"{args.run_a} and {args.run_b} share no finished conversation (scenario#repeat) "
            f"that '{criterion.id}' applies to"
        )
    return a, b, common


def _judge_pairs(
    suite: Suite,
    model: str,
    criterion: Criterion,
    pairs: tuple[dict[str, ConversationRecord], dict[str, ConversationRecord], list[str]],
    concurrency: int | None,
) -> list[Any]:
    """Judge every common conversation both ways round, at most `concurrency` (or the suite's) at once."""
    import asyncio

    from simulator.eventloop import run_async
    from simulator.judging.pairwise import judge_pair
    from simulator.providers.hub import ModelHub

    a, b, common = pairs
    hub = ModelHub.create(suite.providers, suite.cache, suite.base_dir)
    client, bare = hub.client(model)
    slots = asyncio.Semaphore(max(1, concurrency or suite.concurrency))

    async def one(cid: str) -> Any:
        async with slots:
            return await judge_pair(
                client,
                bare,
                criterion,
                cid,
                a[cid].turns,
                b[cid].turns,
                temperature=suite.judges.temperature,
                max_tokens=suite.judges.max_tokens,
            )

    async def go() -> list[Any]:
        try:
            return list(await asyncio.gather(*(one(cid) for cid in common)))
        finally:
            await hub.aclose()

    return run_async(go())


def _print_pairs(results: list[Any], summary: Any, criterion_id: str, model: str) -> None:
    from rich.table import Table

    table = Table(
        "conversation", "A vs B", "B vs A", "winner", "consistent", title=f"{criterion_id} ({model})"
    )
    for r in results:
        ab, ba = (o.choice for o in r.orders)
        consistent = {True: "yes", False: "NO", None: ""}[r.position_consistent]
        table.add_row(r.conversation_id, ab, ba, r.winner or f"error: {r.error}", consistent)
    _console().print(table)
    print(f"A wins {summary.a_wins}, B wins {summary.b_wins}, ties {summary.ties}, errors {summary.errors}")
    print(f"position inconsistency (the verdict flipped with the order): {summary.inconsistent}")
