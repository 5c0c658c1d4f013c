"""`report`, `compare`, `calibrate` and `labels export`: turning run records into numbers people can act on."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.commands.outputs import at_least_one, check_output, write_output
from simulator.diskerrors import naming
from simulator.errors import UserError
from simulator.visible import echo, echo_json

if TYPE_CHECKING:
    from simulator.analysis.golden import Gate
    from simulator.analysis.rundata import RunData


def _fraction(value: str) -> float:
    try:
        number = float(value.rstrip("%")) / (100 if value.endswith("%") else 1)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"'{value}' is not a number such as 0.01 or 1%") from exc
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"'{value}' must be between 0 and 1 (or 0% and 100%)")
    return number


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = subparsers.add_parser(
        "report", help="error rates with intervals, tables, health, cost; HTML/JSON/JUnit"
    )
    report.add_argument("run", type=Path, nargs="?", help="runs/<run-id>")
    add_report_options(report)
    report.add_argument("--json-schema", action="store_true", help="print the JSON report's schema and exit")
    report.add_argument(
        "--baseline", metavar="CELL", help="matrix runs: the cell the others are compared with"
    )
    report.add_argument(
        "--markdown", type=Path, help="matrix runs: write the leaderboard as a Markdown table"
    )
    report.add_argument(
        "--alpha", type=_fraction, default=0.05, help="matrix runs: significance level (0.05)"
    )
    report.set_defaults(handler=cmd_report)

    compare = subparsers.add_parser(
        "compare", help="compare two runs of the same scenarios (A baseline, B candidate)"
    )
    compare.add_argument("a", type=Path, help="baseline run folder")
    compare.add_argument("b", type=Path, help="candidate run folder")
    add_compare_options(compare)
    compare.set_defaults(handler=cmd_compare)
    _register_calibrate(subparsers)


def _count_or_all(text: str) -> int | None:
    """`all` (None: no limit) or a count of at least 0."""
    if text == "all":
        return None
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a count such as 200, or `all`; got {text!r}")


def add_report_options(report: argparse.ArgumentParser) -> None:
    """The options of `simulator report` (also taken by `golden run` and `golden report`)."""
    report.add_argument("--html", type=Path, help="write a self-contained HTML report here")
    report.add_argument("--json", type=Path, help="write the JSON summary here")
    report.add_argument("--json-transcripts", action="store_true", help="include transcripts in the JSON")
    report.add_argument("--junit", type=Path, help="write JUnit XML here (one test per scenario × criterion)")
    report.add_argument(
        "--judge-set", help="report this judge set's verdicts (hash or prefix); default the latest"
    )
    report.add_argument(
        "--target",
        type=_fraction,
        help="failure rate to prove, e.g. 0.01: with no failures, how many runs it needs",
    )
    report.add_argument(
        "--high-stakes-tag", help="tag whose failures are bugs (default: the suite's high_stakes_tag)"
    )
    report.add_argument(
        "--turn-limit-share",
        type=_fraction,
        default=0.2,
        help="flag the run when more conversations hit max_turns",
    )
    report.add_argument("--prices", type=Path, help="price table (default: simulator/data/prices.yaml)")
    report.add_argument(
        "--gate",
        default="token_f1:0.5",
        metavar="METRIC:THRESHOLD",
        help="golden items: the similarity gate shown beside the verdict (token_f1, rouge_l, difflib_ratio, "
        "exact_match; default token_f1:0.5); it never decides",
    )
    report.add_argument("--quiet", action="store_true", help="no terminal report, only the files asked for")
    report.add_argument(
        "--all",
        action="store_true",
        dest="everything",
        help="list every row of the Scenarios and Tag tables (by default rows that all passed alike are one line)",
    )
    report.add_argument(
        "--passing-transcripts",
        type=_count_or_all,
        default=200,
        metavar="N|all",
        help="HTML: at most N passing conversations in full, spread over the scenarios (default 200); every "
        "failing and undecided one is always in; `all` for every one (JUnit and --json-transcripts carry all)",
    )


def add_compare_options(compare: argparse.ArgumentParser) -> None:
    """The options of `simulator compare` (also taken by `golden compare`)."""
    compare.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 if a critical metric got worse"
    )
    compare.add_argument("--alpha", type=_fraction, default=0.05, help="significance level (default 0.05)")
    compare.add_argument("--judge-set-a", help="judge set of A (default: its latest)")
    compare.add_argument("--judge-set-b", help="judge set of B (default: its latest)")
    compare.add_argument("--max-flips", type=at_least_one, default=10, help="flipped cases shown per metric")
    compare.add_argument("--json", type=Path, help="write the comparison as JSON here")
    compare.add_argument(
        "--gate", default="token_f1:0.5", metavar="METRIC:THRESHOLD", help="golden items: the similarity gate"
    )


def _register_calibrate(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    calibrate = subparsers.add_parser(
        "calibrate", help="judge verdicts against human labels (kappa, false passes)"
    )
    calibrate.add_argument("run", type=Path, help="runs/<run-id>")
    calibrate.add_argument(
        "labels",
        type=Path,
        nargs="?",
        help="CSV with conversation_id, criterion_id, label (default: the run folder's labels.jsonl)",
    )
    calibrate.add_argument(
        "--labeller",
        help="with labels.jsonl: one labeller's labels against every verdict, fidelity checks too",
    )
    calibrate.add_argument("--judge-set", help="judge set to calibrate (default: the latest)")
    calibrate.add_argument("--json", type=Path, help="write the calibration as JSON here")
    calibrate.set_defaults(handler=cmd_calibrate)

    labels = subparsers.add_parser("labels", help="label transcripts for judge calibration")
    actions = labels.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="blind transcripts (no verdicts) and a labels.csv to fill in")
    export.add_argument("run", type=Path, help="runs/<run-id>")
    what = export.add_mutually_exclusive_group(required=True)
    what.add_argument("--criterion", help="criterion id to label")
    what.add_argument(
        "--simulator", action="store_true", help="label the simulated user's fidelity checks instead"
    )
    export.add_argument("--out", type=Path, help="folder to write (default labels-<criterion>/)")
    export.add_argument("--sample", type=int, help="label only this many conversations (random, seeded)")
    export.add_argument("--seed", type=int, default=0, help="shuffle seed")
    export.set_defaults(handler=cmd_labels_export)


def cmd_report(args: argparse.Namespace) -> int:
    from simulator.analysis.golden import parse_gate

    if getattr(args, "json_schema", False):
        from simulator.report.json_report import report_schema

        echo_json(json.dumps(report_schema(), indent=2))
        return 0
    if args.run is None:
        raise UserError("name a run folder: simulator report runs/<run-id>")
    for flag in ("html", "json", "junit", "markdown"):
        check_output(f"--{flag}", getattr(args, flag, None))
    from simulator.record.index import is_matrix

    if is_matrix(args.run):
        return _report_matrix(args)
    if getattr(args, "baseline", None) or getattr(args, "markdown", None):
        raise UserError(f"--baseline and --markdown work on a matrix run; {args.run} holds one run")
    gate = parse_gate(args.gate)
    with _loaded_for_report(args.run, args.judge_set) as run:
        return _report_run(args, run, gate)


def _report_run(args: argparse.Namespace, run: RunData, gate: Gate) -> int:
    """`simulator report RUN` on one loaded run: build the report, write the files, print it."""
    from simulator.analysis.cost import load_prices
    from simulator.report.model import ReportOptions, build_report

    options = ReportOptions(
        gate=gate,
        target=args.target,
        high_stakes_tag=args.high_stakes_tag,
        turn_limit_threshold=args.turn_limit_share,
        prices=load_prices(args.prices),
        transcripts=bool(args.html or args.junit or args.json_transcripts),
        passing_transcripts=None if args.junit or args.json_transcripts else args.passing_transcripts,
    )
    report = build_report(run, options)
    # Files first: a terminal report piped into `head` (a broken pipe) must not lose them.
    written = []
    if args.html:
        from simulator.report.html import write_html

        with naming(args.html):
            write_html(report, args.html, args.everything)
        written.append(f"HTML {args.html}")
    if args.json:
        from simulator.report.json_report import write_json

        with naming(args.json):
            write_json(report, args.json, transcripts=args.json_transcripts)
        written.append(f"JSON {args.json}")
    if args.junit:
        from simulator.report.junit import write_junit

        with naming(args.junit):
            write_junit(report, args.junit)
        written.append(f"JUnit {args.junit}")
    if not args.quiet:
        from simulator.report.terminal import render_terminal

        render_terminal(report, everything=args.everything)
    if written:
        echo("wrote " + ", ".join(written), file=sys.stderr)
    return 0


@contextlib.contextmanager
def _loaded_for_report(path: Path, judge_set: str | None) -> Iterator[RunData]:
    """The run, its turns left in the folder (re-read for the conversations the report shows), with the
    cyclic garbage collector paused until the report is written: the records, verdicts and transcripts
    hold no cycles, and each collection rescanned 10^6 of them (seconds of the report's own work).
    Reference counting frees as usual; the collector resumes after (a process that reports many runs,
    tests or the API, collects then)."""
    from simulator.analysis.rundata import load_run

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield load_run(path, judge_set, keep_turns=False)
    finally:
        if was_enabled:
            gc.enable()


def _report_matrix(args: argparse.Namespace) -> int:
    """`simulator report MATRIX`: the leaderboard of a matrix run (its index.json lists the cells)."""
    from simulator.analysis.cost import load_prices
    from simulator.analysis.leaderboard import build_leaderboard

    if args.junit or args.judge_set:
        raise UserError(
            f"--junit and --judge-set work on one cell: simulator report {args.run}/<cell> --junit FILE"
        )
    board = build_leaderboard(args.run, args.baseline, args.alpha, load_prices(args.prices))
    if not args.quiet:
        from simulator.report.leaderboard import render_leaderboard

        render_leaderboard(board)
    written = []
    if args.html:
        from simulator.report.leaderboard_html import write_leaderboard_html

        write_leaderboard_html(board, args.html)
        written.append(f"HTML {args.html}")
    if args.json:
        write_output(args.json, board.model_dump_json(indent=2) + "\n")
        written.append(f"JSON {args.json}")
    if args.markdown:
        from simulator.report.leaderboard import leaderboard_markdown

        write_output(args.markdown, leaderboard_markdown(board))
        written.append(f"Markdown {args.markdown}")
    if written:
        echo("wrote " + ", ".join(written), file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from simulator.analysis.compare import compare_runs
    from simulator.analysis.golden import parse_gate
    from simulator.report.views import render_comparison

    check_output("--json", args.json)
    gate = parse_gate(args.gate)
    comparison = compare_runs(args.a, args.b, args.alpha, args.judge_set_a, args.judge_set_b, gate)
    if args.json:
        write_output(args.json, comparison.model_dump_json(indent=2) + "\n")
    render_comparison(comparison, max_flips=args.max_flips)
    if args.fail_on_regression and comparison.regressions:
        echo(
            f"regression: {len(comparison.regressions)} critical metric(s) significantly worse",
            file=sys.stderr,
        )
        return 1
    if args.fail_on_regression and comparison.undecided:
        echo(
            f"undecidable: {len(comparison.undecided)} critical metric(s) had too little to compare (exit 3)",
            file=sys.stderr,
        )
        return 3
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from simulator.analysis.calibrate import calibrate
    from simulator.analysis.rundata import load_run
    from simulator.report.views import render_calibration

    check_output("--json", args.json)
    run = load_run(args.run, args.judge_set)
    if args.labels is None and args.labeller is None:
        from simulator.analysis.calibrate import calibrate_labels
        from simulator.report.views import render_panel

        panel = calibrate_labels(run)
        render_panel(panel)
        if args.json:
            write_output(args.json, panel.model_dump_json(indent=2) + "\n")
        return 0
    rows = None
    if args.labels is None:
        from simulator.analysis.fidelity_labels import labels_from_run

        rows = labels_from_run(run, args.labeller)
    calibration = calibrate(run, args.labels or args.run / "labels.jsonl", rows)
    render_calibration(calibration)
    if args.json:
        write_output(args.json, calibration.model_dump_json(indent=2) + "\n")
    return 0


def cmd_labels_export(args: argparse.Namespace) -> int:
    from simulator.analysis.calibrate import export_labels
    from simulator.analysis.rundata import load_run

    if args.sample is not None and args.sample < 1:
        raise UserError("--sample must be at least 1")
    if args.simulator:
        from simulator.analysis.fidelity_labels import export_simulator_labels

        out = args.out or Path("labels-simulator")
        transcripts, labels, count = export_simulator_labels(load_run(args.run), out, args.sample, args.seed)
        echo(f"wrote {count} blind transcripts to {transcripts} and a fidelity labels sheet to {labels}")
        echo(f"fill in the label column (pass, fail or n/a), then: simulator calibrate {args.run} {labels}")
        return 0
    out = args.out or Path(f"labels-{args.criterion.replace('/', '_')}")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: a file of that name exists; name a folder for the labelling sheet")
    transcripts, labels, count = export_labels(
        load_run(args.run), args.criterion, out, args.sample, args.seed
    )
    echo(f"wrote {count} blind transcripts to {transcripts} and a labels sheet to {labels}")
    echo(f"fill in the label column (pass, fail or n/a), then: simulator calibrate {args.run} {labels}")
    if "expected_level" in labels.read_text(encoding="utf-8").partition("\n")[0]:
        echo(
            "and the expected_level column (the level each conversation needed), then: "
            f"simulator labels import {args.run} {labels} --labeller NAME"
        )
    return 0
