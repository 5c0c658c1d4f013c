"""`golden run`: a golden set through the main engine, then its report. `golden report` and `golden compare`
are aliases of `simulator report` and `simulator compare` (same options, same functions)."""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path

from simulator.commands.report import add_compare_options, add_report_options, cmd_compare, cmd_report
from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    golden = subparsers.add_parser(
        "golden",
        help="score a bot on a golden set of single-turn items (no LLM judge)",
        description="Golden sets: a user message, a reference answer and assertions per item, run through "
        "the main engine into an ordinary run folder.",
    )
    commands = golden.add_subparsers(dest="golden_command", metavar="COMMAND", required=True)

    run = commands.add_parser("run", help="run a bot over golden items, then print the report")
    run.add_argument("items", type=Path, metavar="ITEMS", help="golden items file (.yaml, .yml or .csv)")
    run.add_argument("--bot", required=True, metavar="MODULE:FACTORY", help="factory returning a fresh bot")
    run.add_argument("--samples", type=int, default=1, metavar="K", help="samples per item (all must pass)")
    run.add_argument("--concurrency", type=int, default=8, metavar="C", help="conversations in flight (8)")
    run.add_argument(
        "--out", type=Path, metavar="DIR", help="the run folder to write (default runs/<run-id>)"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_report_options(run)
    run.set_defaults(handler=cmd_golden_run)

    report = commands.add_parser("report", help="the same as `simulator report RUN`")
    report.add_argument("run", type=Path, metavar="RUN", help="runs/<run-id>")
    add_report_options(report)
    report.set_defaults(handler=cmd_report)

    compare = commands.add_parser("compare", help="the same as `simulator compare A B`")
    compare.add_argument("a", type=Path, metavar="RUN_A", help="baseline run folder")
    compare.add_argument("b", type=Path, metavar="RUN_B", help="candidate run folder")
    add_compare_options(compare)
    compare.set_defaults(handler=cmd_compare)


def cmd_golden_run(args: argparse.Namespace) -> int:
    from simulator.analysis.golden import parse_gate
    from simulator.api.judging import GoldenOptions, run_golden

    parse_gate(args.gate)  # a bad --gate is an error before anything runs, not after
    options = GoldenOptions(
        samples=args.samples, concurrency=args.concurrency, out=args.out, progress=not args.no_progress
    )
    from simulator.eventloop import run_async

    result = run_async(run_golden(args.items, args.bot, options))
    args.run = result.folder
    code = cmd_report(args)
    echo(f"run folder: {result.folder}")
    echo(
        f"next: simulator compare {result.folder} <another run folder>   ·   simulator run --resume {result.folder}"
    )
    return code
