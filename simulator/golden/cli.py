"""The `golden` commands (`run`, `report`, `compare`), registered on the main parser by `register`.

Each handler takes the parsed arguments and returns an exit code; a user mistake raises `UserError`,
which the main command line prints as one line and turns into exit code 2.
"""

from __future__ import annotations

__all__ = ["cmd_compare", "cmd_report", "cmd_run", "register"]

import argparse
from pathlib import Path
from typing import Any

from simulator.errors import UserError


def _write_json(path: str | None, text: str) -> None:
    if path:
        try:
            Path(path).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise UserError(f"--json {path}: cannot write: {exc.strerror or exc}") from None


def cmd_run(args: argparse.Namespace) -> int:
    """`golden run ITEMS --bot module:factory`: run, write `runs/<id>/`, print the report."""
    from rich.console import Console

    from simulator.golden.items import load_items
    from simulator.golden.report import build_report, render_report
    from simulator.golden.runner import RunOptions, run_golden
    from simulator.golden.scoring import parse_gate

    if args.samples < 1:
        raise UserError(f"--samples must be at least 1, got {args.samples}")
    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {args.concurrency}")
    gate = parse_gate(args.gate)
    golden = load_items(args.items)
    options = RunOptions(
        samples=args.samples,
        concurrency=args.concurrency,
        out_dir=Path(args.out),
        run_id=args.run_id,
        gate=gate,
    )
    import asyncio

    run = asyncio.run(run_golden(golden, args.bot, options))
    report = build_report(run, gate)
    console = Console()
    render_report(report, console)
    console.print(f"\nrun folder: {run.path}", soft_wrap=True, highlight=False)  # never wrap a path
    _write_json(args.json, report.to_json())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """`golden report RUN`: print the report of a finished (or interrupted) run."""
    from rich.console import Console

    from simulator.golden.report import build_report, render_report
    from simulator.golden.runner import load_run
    from simulator.golden.scoring import parse_gate

    run = load_run(args.run)
    report = build_report(run, parse_gate(args.gate) if args.gate else None)
    render_report(report, Console())
    _write_json(args.json, report.to_json())
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """`golden compare RUN_A RUN_B`: the two runs side by side, McNemar's exact test and the flipped items."""
    from rich.console import Console

    from simulator.golden.compare import compare_runs, render_compare
    from simulator.golden.runner import load_run
    from simulator.golden.scoring import parse_gate

    comparison = compare_runs(load_run(args.run_a), load_run(args.run_b), parse_gate(args.gate))
    render_compare(comparison, Console())
    _write_json(args.json, comparison.to_json())
    return 0


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add `golden run|report|compare` to the main parser's subparsers; each sets `handler`, which the main command line calls."""
    golden = subparsers.add_parser(
        "golden",
        help="score a bot on a golden set of single-turn items (no LLM judge)",
        description="Golden sets: a user message, a reference answer and assertions per item.",
    )
    commands = golden.add_subparsers(dest="golden_command", metavar="COMMAND", required=True)
    gate_help = "similarity gate reported next to the verdict, METRIC:THRESHOLD (token_f1, rouge_l, "
    gate_help += "difflib_ratio, exact_match)"

    run = commands.add_parser("run", help="run a bot over golden items and report")
    run.add_argument("items", metavar="ITEMS", help="golden items file (.yaml, .yml or .csv)")
    run.add_argument("--bot", required=True, metavar="MODULE:FACTORY", help="factory returning a fresh bot")
    run.add_argument("--samples", type=int, default=1, metavar="K", help="samples per item (all must pass)")
    run.add_argument("--concurrency", type=int, default=8, metavar="C", help="item samples in flight")
    run.add_argument("--out", default="runs", metavar="DIR", help="parent folder of the run folder (runs)")
    run.add_argument("--run-id", default=None, help="name of the run folder (default: golden-<time>-<hex>)")
    run.add_argument("--gate", default="token_f1:0.5", help=gate_help + " (default token_f1:0.5)")
    run.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON")
    run.set_defaults(handler=cmd_run)

    report = commands.add_parser("report", help="print the report of a golden run folder")
    report.add_argument("run", metavar="RUN", help="run folder (runs/<run-id>)")
    report.add_argument("--gate", default=None, help=gate_help + " (default: the one the run recorded)")
    report.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON")
    report.set_defaults(handler=cmd_report)

    compare = commands.add_parser("compare", help="compare two golden runs of the same items")
    compare.add_argument("run_a", metavar="RUN_A", help="baseline run folder")
    compare.add_argument("run_b", metavar="RUN_B", help="candidate run folder")
    compare.add_argument("--gate", default="token_f1:0.5", help=gate_help + " (default token_f1:0.5)")
    compare.add_argument("--json", default=None, metavar="FILE", help="also write the comparison as JSON")
    compare.set_defaults(handler=cmd_compare)
    return golden
