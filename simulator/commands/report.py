"""`report`, `compare`, `calibrate` and `labels export`: turning run records into numbers people can act on."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import json
import sys
from pathlib import Path

from simulator.commands.outputs import at_least_one, check_output
from simulator.errors import UserError


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
        "--high-stakes-tag", default="high-stakes", help="tag whose failures are bugs (high-stakes)"
    )
    report.add_argument(
        "--turn-limit-share",
        type=_fraction,
        default=0.2,
        help="flag the run when more conversations hit max_turns",
    )
    report.add_argument("--prices", type=Path, help="price table (default: simulator/data/prices.yaml)")
    report.add_argument("--quiet", action="store_true", help="no terminal report, only the files asked for")
    report.add_argument("--json-schema", action="store_true", help="print the JSON report's schema and exit")
    report.set_defaults(handler=cmd_report)

    compare = subparsers.add_parser(
        "compare", help="compare two runs of the same scenarios (A baseline, B candidate)"
    )
    compare.add_argument("a", type=Path, help="baseline run folder")
    compare.add_argument("b", type=Path, help="candidate run folder")
    compare.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 if a critical metric got worse"
    )
    compare.add_argument("--alpha", type=_fraction, default=0.05, help="significance level (default 0.05)")
    compare.add_argument("--judge-set-a", help="judge set of A (default: its latest)")
    compare.add_argument("--judge-set-b", help="judge set of B (default: its latest)")
    compare.add_argument("--max-flips", type=at_least_one, default=10, help="flipped cases shown per metric")
    compare.add_argument("--json", type=Path, help="write the comparison as JSON here")
    compare.set_defaults(handler=cmd_compare)

    calibrate = subparsers.add_parser(
        "calibrate", help="judge verdicts against human labels (kappa, false passes)"
    )
    calibrate.add_argument("run", type=Path, help="runs/<run-id>")
    calibrate.add_argument("labels", type=Path, help="CSV with conversation_id, criterion_id, label")
    calibrate.add_argument("--judge-set", help="judge set to calibrate (default: the latest)")
    calibrate.add_argument("--json", type=Path, help="write the calibration as JSON here")
    calibrate.set_defaults(handler=cmd_calibrate)

    labels = subparsers.add_parser("labels", help="label transcripts for judge calibration")
    actions = labels.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    export = actions.add_parser("export", help="blind transcripts (no verdicts) and a labels.csv to fill in")
    export.add_argument("run", type=Path, help="runs/<run-id>")
    export.add_argument("--criterion", required=True, help="criterion id to label")
    export.add_argument("--out", type=Path, help="folder to write (default labels-<criterion>/)")
    export.add_argument("--sample", type=int, help="label only this many conversations (random, seeded)")
    export.add_argument("--seed", type=int, default=0, help="shuffle seed")
    export.set_defaults(handler=cmd_labels_export)


def cmd_report(args: argparse.Namespace) -> int:
    from simulator.analysis import load_prices, load_run
    from simulator.report.model import ReportOptions, build_report

    if args.json_schema:
        from simulator.report.json_report import report_schema

        print(json.dumps(report_schema(), indent=2))
        return 0
    if args.run is None:
        raise UserError("name a run folder: simulator report runs/<run-id>")
    for flag in ("html", "json", "junit"):
        check_output(f"--{flag}", getattr(args, flag))
    run = load_run(args.run, args.judge_set)
    options = ReportOptions(
        target=args.target,
        high_stakes_tag=args.high_stakes_tag,
        turn_limit_threshold=args.turn_limit_share,
        prices=load_prices(args.prices),
    )
    report = build_report(run, options)
    # Files first: a terminal report piped into `head` (a broken pipe) must not lose them.
    written = []
    if args.html:
        from simulator.report.html import write_html

        write_html(report, args.html)
        written.append(f"HTML {args.html}")
    if args.json:
        from simulator.report.json_report import write_json

        write_json(report, args.json, transcripts=args.json_transcripts)
        written.append(f"JSON {args.json}")
    if args.junit:
        from simulator.report.junit import write_junit

        write_junit(report, args.junit)
        written.append(f"JUnit {args.junit}")
    if not args.quiet:
        from simulator.report.terminal import render_terminal

        render_terminal(report)
    if written:
        print("wrote " + ", ".join(written), file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from simulator.analysis.compare import compare_runs
    from simulator.report.views import render_comparison

    check_output("--json", args.json)
    comparison = compare_runs(args.a, args.b, args.alpha, args.judge_set_a, args.judge_set_b)
    if args.json:
        args.json.write_text(comparison.model_dump_json(indent=2) + "\n", encoding="utf-8")
    render_comparison(comparison, max_flips=args.max_flips)
    if args.fail_on_regression and comparison.regressions:
        print(
            f"regression: {len(comparison.regressions)} critical metric(s) significantly worse",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from simulator.analysis import load_run
    from simulator.analysis.calibrate import calibrate
    from simulator.report.views import render_calibration

    check_output("--json", args.json)
    calibration = calibrate(load_run(args.run, args.judge_set), args.labels)
    if args.json:
        args.json.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
    render_calibration(calibration)
    return 0


def cmd_labels_export(args: argparse.Namespace) -> int:
    from simulator.analysis import load_run
    from simulator.analysis.calibrate import export_labels

    if args.sample is not None and args.sample < 1:
        raise UserError("--sample must be at least 1")
    out = args.out or Path(f"labels-{args.criterion.replace('/', '_')}")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: a file of that name exists; name a folder for the labelling sheet")
    transcripts, labels, count = export_labels(
        load_run(args.run), args.criterion, out, args.sample, args.seed
    )
    print(f"wrote {count} blind transcripts to {transcripts} and a labels sheet to {labels}")
    print(f"fill in the label column (pass, fail or n/a), then: simulator calibrate {args.run} {labels}")
    return 0
