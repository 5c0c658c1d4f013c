"""`judge` and `judge-pairwise`: judge a stored run again, and compare two runs' bots criterion by criterion.

They parse, call the engine (engine/rejudge.py, engine/pairwise.py) and print."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.commands.outputs import at_least_one, write_output
from simulator.errors import UserError
from simulator.plural import plural
from simulator.visible import echo

if TYPE_CHECKING:  # imported where used, so `simulator --help` loads none of them
    from simulator.config.suite import Suite
    from simulator.record.models import Verdict
    from simulator.record.selection import Selection
    from simulator.report.section import Table as SectionTable


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
    judge.add_argument(
        "--outcome-source",
        nargs="+",
        choices=["state", "messages", "tool", "judge"],
        metavar="SOURCE",
        help="read the outcome from these sources, in order (state, messages, tool, judge), instead of the "
        "suite's outcome.source; the conversations are not run again (docs/outcome-sources.md)",
    )
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


def verdict_table(rows: list[dict[str, Any]]) -> SectionTable:
    """The `judge` summary as a report table (section.py): drawn by the report's terminal renderer, so it
    fits 80 columns (a CI log, a pipe) with nothing cut; the five counts fold into one column there."""
    from simulator.report.section import COUNT_COLUMNS, Column, Table

    tail = [Column("unverified", numeric=True), Column("cached/input tokens", numeric=True)]
    table = Table([Column("criterion"), Column("kind"), *COUNT_COLUMNS, *tail])
    for row in rows:
        counts = row["results"]
        if row["kind"] == "metric":
            scores = row["scores"]
            mean = f"mean {sum(scores) / len(scores):.3f}" if scores else ""
            table.add(row["criterion"], f"metric, {mean}" if mean else "metric", *[""] * 7)
            continue
        tokens = f"{row['cached_tokens']}/{row['input_tokens']}" if "input_tokens" in row else ""
        fails, errors = counts["fail"], counts["error"]
        table.add(
            row["criterion"],
            row["kind"],
            *(str(counts[k]) for k in ("pass", "fail", "not_applicable", "error", "not_judged")),
            str(row["unverified"]),
            tokens,
            state="fail" if fails else "error" if errors else None,
        )
    return table


def _print_table(rows: list[dict[str, Any]]) -> None:
    from simulator.report.draw_terminal import draw_table

    draw_table(_console(), verdict_table(rows))


def _console() -> Any:
    """The report's console: as wide as the terminal, 80 columns (or $COLUMNS) in a pipe or a CI log."""
    from simulator.visible import terminal_console

    return terminal_console()


def cmd_judge(args: argparse.Namespace) -> int:
    from simulator.api.judging import RejudgeOptions, judge_run, prepare_rejudge
    from simulator.eventloop import run_async
    from simulator.record.selection import select_verdicts

    options = RejudgeOptions(
        args.suite, args.judges, args.judge_model, args.judge_models, args.samples, args.outcome_source
    )
    plan = prepare_rejudge(args.run, options)
    for warning in plan.warnings:
        echo(f"warning: {warning}", file=sys.stderr)
    folder, suite, records = plan.folder, plan.suite, plan.records
    result, stage, todo = run_async(
        judge_run(
            folder,
            suite,
            plan.scenarios,
            records,
            retry_errors=args.retry_errors,
            concurrency=args.concurrency,
        )
    )
    selection = select_verdicts(folder, stage.judge_set_hash, missing_ok=True)
    current, others = selection.own, selection.others
    model = ", ".join(suite.judges.judge_models()) or "none (LLM criteria not judged)"
    echo(f"judge set {stage.judge_set_hash[:19]}  model: {model}  criteria: {len(stage.criteria)}")
    if suite.outcome is not None:
        echo(f"outcome {suite.outcome.key} from: {', '.join(suite.outcome.sources)}")
    echo(
        f"judged {todo} of {plural(len(records), 'conversation')} ({plural(result.verdicts, 'verdict')} written); "
        f"{others} earlier verdicts of other judge sets kept"
    )
    _print_table(verdict_rows(current, selection.samples))
    _print_stability(selection)
    unverified = sum(v.evidence_verified is False for v in current)
    if unverified:
        echo(
            f"{plural(unverified, 'verdict')} have evidence not found in the transcript (evidence_verified: false)"
        )
    return 0


def _print_stability(selection: Selection) -> None:
    """With samples or a jury: each criterion's flip rate, and the jury's agreement."""
    from simulator.analysis.stability import jury_rows, stability_rows

    samples = selection.samples
    if not samples:
        return
    for row in stability_rows(samples):
        flag = "  UNSTABLE: read the rubric (docs/judges.md)" if row.unstable else ""
        echo(f"{row.criterion_id} ({row.judge_model}, {row.samples} samples): flips {row.flips.text}{flag}")
    finals = [v for v in selection.own if v.aggregate is not None]
    for jury in jury_rows(samples, finals):
        kappa = "n/a" if jury.fleiss_kappa is None else f"{jury.fleiss_kappa:.2f}"
        echo(
            f"{jury.criterion_id} jury ({jury.rule}): all agree {jury.agreement.text}; Fleiss' kappa {kappa}; "
            f"{len(jury.disagreements) + jury.more_disagreements} disagreements"
        )


def cmd_judge_pairwise(args: argparse.Namespace) -> int:
    from simulator.analysis.pairwise import summarise_pairs
    from simulator.api.judging import common_conversations, judge_pairs, pairwise_criterion, stored_suite
    from simulator.eventloop import run_async
    from simulator.record.folder import RunFolder

    # The judge reads held-out transcripts too (record/seal.py): it is a machine, not the tuner.
    folder_a, folder_b = RunFolder.open_unsealed(args.run_a), RunFolder.open_unsealed(args.run_b)
    suite = stored_suite(folder_a.read_manifest(), folder_a.path)
    suite_b = stored_suite(folder_b.read_manifest(), folder_b.path)
    criterion = pairwise_criterion(suite, args.judges, args.criterion)
    model = _pairwise_model(args, suite, suite_b)
    pairs = common_conversations(folder_a, folder_b, criterion)
    results = run_async(judge_pairs(suite, model, criterion, pairs, args.concurrency))
    if args.out:
        write_output(args.out, "".join(r.model_dump_json() + "\n" for r in results))
    _print_pairs(results, summarise_pairs(results), criterion.id, model)
    _print_length_control(results, pairs)
    return 0


def _print_length_control(results: list[Any], pairs: Any) -> None:
    """HealthBench-style length control: the win rate over length-matched pairs, and whether the verdict
    follows length (analysis/length_bias.py); a warning when it clearly does."""
    from simulator.analysis.length_bias import LENGTH_TOLERANCE, pairwise_length_control
    from simulator.stats.basic import pct

    a, b, _ = pairs
    control = pairwise_length_control(results, a, b)
    echo(
        f"win rate of A (ties count half): {pct(control.a_win_rate)} of {control.judged} judged pairs; "
        f"length-controlled (bot replies within {LENGTH_TOLERANCE:.0%}): {pct(control.matched_a_win_rate)} "
        f"of {control.matched} pairs"
    )
    echo(
        f"length and verdict: {control.correlation.text}; the longer conversation won "
        f"{control.longer_won.k}/{control.longer_won.n} decided pairs of different lengths"
    )
    if control.warning:
        echo(f"warning: {control.warning}", file=sys.stderr)


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
        echo(f"warning: {warning}", file=sys.stderr)
    return str(model)


def _print_pairs(results: list[Any], summary: Any, criterion_id: str, model: str) -> None:
    from simulator.report.draw_terminal import draw_table
    from simulator.report.section import Column, Table

    names = ("conversation", "A vs B", "B vs A", "winner", "consistent")
    table = Table([Column(n) for n in names], title=f"{criterion_id} ({model})")
    for r in results:
        ab, ba = (o.choice for o in r.orders)
        consistent = {True: "yes", False: "NO", None: ""}[r.position_consistent]
        table.add(r.conversation_id, ab, ba, r.winner or f"error: {r.error}", consistent)
    draw_table(_console(), table)
    echo(f"A wins {summary.a_wins}, B wins {summary.b_wins}, ties {summary.ties}, errors {summary.errors}")
    echo(f"position inconsistency (the verdict flipped with the order): {summary.inconsistent}")
