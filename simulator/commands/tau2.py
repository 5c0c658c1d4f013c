"""`import-tau2`: tau2-bench task files (airline, retail, telecom) as a suite folder (docs/tau2.md)."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import sys
from pathlib import Path

from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = subparsers.add_parser(
        "import-tau2", help="convert tau2-bench tasks (and their database) into a suite folder"
    )
    imp.add_argument("tasks", type=Path, help="a tau2-bench tasks.json")
    imp.add_argument(
        "--domain", required=True, help="the tau2 domain of the tasks (airline, retail, telecom)"
    )
    imp.add_argument(
        "--db", type=Path, help="the domain's database (tau2's db.json): the environment's state"
    )
    imp.add_argument("--out", type=Path, required=True, help="the suite folder to create")
    imp.add_argument(
        "--tools",
        metavar="MODULE",
        help="a module whose TOOLS implements the domain's tools (default: built in)",
    )
    imp.add_argument(
        "--scripted",
        action="store_true",
        help="play each task with the scripted user (no model) instead of a simulated one",
    )
    imp.add_argument(
        "--bot", metavar="MODULE:FACTORY", help="the python bot to test (default: an http bot to edit)"
    )
    imp.add_argument(
        "--task", action="append", default=[], metavar="ID", help="convert only this task (repeatable)"
    )
    imp.add_argument(
        "--skip-unsupported",
        action="store_true",
        help="leave out tasks that cannot run here (listed in NOTES.md)",
    )
    imp.set_defaults(handler=cmd_import_tau2)


def cmd_import_tau2(args: argparse.Namespace) -> int:
    from simulator.tau2.suite import Tau2ImportOptions, import_tau2

    summary = import_tau2(
        Tau2ImportOptions(
            tasks=args.tasks,
            domain=args.domain,
            out=args.out,
            db=args.db,
            tools=args.tools,
            scripted=args.scripted,
            bot=args.bot,
            task_ids=args.task,
            skip_unsupported=args.skip_unsupported,
        )
    )
    for task_id, reason in summary.skipped.items():
        echo(f"left out: task {task_id}: {reason}", file=sys.stderr)
    noted = sum(len(notes) for notes in summary.notes.values())
    echo(
        f"converted {len(summary.scenarios)} tasks into {summary.out} ({summary.criteria} criteria from "
        f"nl_assertions); left out {len(summary.skipped)}; {noted} notes in {summary.out / 'NOTES.md'}"
    )
    echo(f"next: simulator run {summary.out / 'suite.yaml'}")
    return 0
