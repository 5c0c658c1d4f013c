"""`coverage`: the map of a suite's vignettes against its hazard log (and runs), with the thin cells."""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path

from simulator.commands.outputs import check_output, write_output
from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cover = subparsers.add_parser(
        "coverage",
        help="which hazards, controls, presentations, persona factors and channels the vignettes reach",
        description=(
            "Count the distinct vignettes (base ids: variants are not new evidence) in each cell of hazard × "
            "control × presentation (expected outcome level) × persona factor × channel, list the thin cells, "
            "and, with runs, each control's 'needs N more distinct vignettes' from the safety case."
        ),
    )
    cover.add_argument("suite", type=Path, help="the suite file")
    cover.add_argument("--hazards", type=Path, required=True, help="the hazard log (hazards.yaml)")
    cover.add_argument("--runs", type=Path, nargs="*", default=[], metavar="RUN", help="runs of the suite")
    cover.add_argument("--thin", type=int, default=3, help="a cell is thin below this many vignettes (3)")
    cover.add_argument("--all", action="store_true", help="list every cell, not only the thin ones")
    cover.add_argument("--json", type=Path, help="write the map as JSON here")
    cover.add_argument("--html", type=Path, help="write the map as an HTML page here")
    cover.add_argument(
        "--drafts", type=Path, help="the review queue: name the accepted drafts and who accepted them"
    )
    cover.set_defaults(handler=cmd_coverage)


def cmd_coverage(args: argparse.Namespace) -> int:
    check_output("--html", args.html)
    check_output("--json", args.json)
    from simulator.authoring.coverage import coverage_lines, load_coverage
    from simulator.errors import UserError

    if args.thin < 1:
        raise UserError(f"--thin {args.thin}: give a number of vignettes of 1 or more")
    coverage = load_coverage(args.suite, args.hazards, args.runs, args.thin, args.drafts)
    if args.json:
        write_output(args.json, coverage.model_dump_json(indent=1))
    if args.html:
        from simulator.authoring.coverage_view import coverage_page

        write_output(args.html, coverage_page(coverage, all_cells=args.all))
    echo("\n".join(coverage_lines(coverage, all_cells=args.all)))
    return 0
