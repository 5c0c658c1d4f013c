"""`simulator gate`: requirements on a run's rates, judged on the scenario-clustered 95% bound, as an exit code."""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path

from simulator.commands.outputs import check_output, write_output


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gate = subparsers.add_parser(
        "gate",
        help="CI gate: exit 0 met, 1 not met, 3 undecidable (too few scenarios), 2 user error",
        description=(
            "Judge each --require on the scenario-clustered 95% bound, not the point estimate. "
            "Exit 0 when every requirement is met, 1 when one is not, 3 when one cannot be decided "
            "(too few scenarios to show the bound, or the scenario set changed from --baseline), 2 on a "
            "user error."
        ),
    )
    gate.add_argument("run", type=Path, help="runs/<run-id>")
    gate.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="'METRIC OP VALUE'",
        help='e.g. "under_triage <= 5%%" or "<critical level>_sensitivity >= 95%%"; repeat for several',
    )
    gate.add_argument("--baseline", type=Path, help="a previous run: its scenario set must be the same")
    gate.add_argument("--judge-set", help="judge set of RUN (default: its latest)")
    gate.add_argument("--json", type=Path, help="write the gate result as JSON here")
    gate.set_defaults(handler=cmd_gate)


def cmd_gate(args: argparse.Namespace) -> int:
    check_output("--json", args.json)
    from simulator.analysis.rundata import load_run
    from simulator.report.gate import evaluate_gate
    from simulator.report.views import render_gate

    run = load_run(args.run, args.judge_set)
    baseline = load_run(args.baseline) if args.baseline is not None else None
    result = evaluate_gate(run, args.require, baseline)
    render_gate(result)
    if args.json:
        write_output(args.json, result.model_dump_json(indent=2) + "\n")
    return result.exit_code
