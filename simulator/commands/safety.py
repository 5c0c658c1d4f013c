"""`safety-case`, `history` and `new hazard`: from runs to a clinical safety case, and its trend over runs."""

from __future__ import annotations

__all__ = ["add_new_hazard", "register"]

import argparse
import sys
from pathlib import Path
from typing import Any

from simulator.commands.outputs import write_output
from simulator.errors import UserError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    case = subparsers.add_parser(
        "safety-case",
        help="the clinical safety case of a hazard log on runs: exit 0 all met, 1 one not met, 3 not demonstrable",
        description=(
            "Judge every control of the hazard log on the runs' verdicts (scenario-clustered 95%% bound, as "
            "`gate`), place each hazard's residual risk on the declared matrix, and record the hashes of "
            "everything read. Exit 0 when every control is met, 1 when one is not, 3 when one cannot be "
            "demonstrated on this evidence, 2 on a user error. Never writes into a run folder."
        ),
    )
    case.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="runs/<run-id> (several are pooled)")
    case.add_argument("--hazards", type=Path, required=True, help="the hazard log (hazards.yaml)")
    case.add_argument("--judge-set", help="judge set of the runs (default: each run's latest)")
    case.add_argument("--html", type=Path, help="write the printable HTML document here")
    case.add_argument("--pdf", type=Path, help="also print it to PDF with the system Chromium")
    case.add_argument("--json", type=Path, help="write the document as JSON here (for auditors' tools)")
    case.add_argument("--quiet", action="store_true", help="print only the statement")
    case.set_defaults(handler=cmd_safety_case)

    history = subparsers.add_parser(
        "history",
        help="key rates and hazard bounds across runs in time order, with the paired test between runs",
    )
    history.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run folders (any order)")
    history.add_argument("--hazards", type=Path, help="a hazard log: add each hazard's bound per run")
    history.add_argument("--html", type=Path, help="write the HTML page with the SVG chart here")
    history.add_argument("--json", type=Path, help="write the history as JSON here")
    history.set_defaults(handler=cmd_history)


def add_new_hazard(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`simulator new hazard`: one hazard with one control, written as a commented YAML file and re-read."""
    hazard = kinds.add_parser("hazard", help="a hazard log entry: cause, effect, severity, controls")
    for flag in ("--id", "--title", "--cause", "--effect", "--severity", "--likelihood"):
        hazard.add_argument(flag)
    hazard.add_argument("--control", help="what the control does, in words")
    hazard.add_argument("--criteria", help="comma-separated criterion ids that verify the control")
    hazard.add_argument("--tags", help="comma-separated scenario tags of the verifying scenarios")
    hazard.add_argument("--threshold", help='e.g. "under_triage <= 2%%" (the gate\'s metrics)')
    hazard.add_argument("--out", type=Path, help="file to write (default hazards.yaml)")
    hazard.add_argument("--force", action="store_true", help="overwrite an existing file")
    hazard.set_defaults(handler=cmd_new_hazard)


def cmd_safety_case(args: argparse.Namespace) -> int:
    from rich.console import Console

    from simulator.report.documents import document_kind
    from simulator.report.draw_terminal import draw_sections
    from simulator.safety.case import build_safety_case, load_runs
    from simulator.safety.hazards import load_hazard_log
    from simulator.safety.html import print_pdf

    kind = document_kind("safety-case")
    case = build_safety_case(load_runs(args.runs, args.judge_set), load_hazard_log(args.hazards))
    sections = kind.sections(case)
    draw_sections(Console(), sections[:1] if args.quiet else sections[:-1], lines=True, max_details=3)
    if args.json:
        write_output(args.json, case.model_dump_json(indent=2) + "\n")
    html = kind.page(case)
    if args.html:
        write_output(args.html, html)
    if args.pdf:
        print_pdf(html, args.pdf)
    print(f"evidence {case.evidence_hash}  ·  exit {case.exit_code}", file=sys.stderr)
    return case.exit_code


def cmd_history(args: argparse.Namespace) -> int:
    from simulator.safety.hazards import load_hazard_log
    from simulator.safety.history import build_history
    from simulator.safety.history_view import history_html, print_history

    log = load_hazard_log(args.hazards) if args.hazards else None
    history = build_history(args.runs, log)
    print_history(history)
    if args.json:
        write_output(args.json, history.model_dump_json(indent=2) + "\n")
    if args.html:
        write_output(args.html, history_html(history))
    return 0


def _hazard_yaml(f: dict[str, Any]) -> str:
    from simulator.commands.templates import _block, _value

    return (
        "# A hazard log (docs/safety-case.md): hazards on a risk matrix, each with controls that runs verify.\n"
        "title: Hazard log\n"
        "matrix: dcb0129   # severity minor..catastrophic x likelihood very_low..very_high; or declare one\n"
        "hazards:\n"
        f"  - id: {_value(f['id'])}\n"
        f"    title: {_value(f['title'])}\n"
        "    # What in the system leads to it, and what happens to the patient.\n"
        f"    cause: {_block(f['cause']).replace(chr(10), chr(10) + '    ')}\n"
        f"    effect: {_block(f['effect']).replace(chr(10), chr(10) + '    ')}\n"
        "    # Initial (uncontrolled) estimates on the matrix; the residual risk comes from the runs.\n"
        f"    severity: {_value(f['severity'])}\n"
        f"    likelihood: {_value(f['likelihood'])}\n"
        "    controls:\n"
        f"      - id: {_value(f['id'] + '-C1')}\n"
        f"        description: {_value(f['control'])}\n"
        "        # The criteria whose verdicts verify it, on the scenarios with these tags (none: all).\n"
        f"        criteria: {_value(f['criteria'])}\n"
        f"        tags: {_value(f['tags'])}\n"
        "        # Judged on the scenario-clustered 95% bound, as `simulator gate --require`.\n"
        f"        threshold: {_value(f['threshold'])}\n"
    )


def cmd_new_hazard(args: argparse.Namespace) -> int:
    from simulator.commands.asking import Asker, write_new
    from simulator.safety.hazards import DCB0129, load_hazard_log

    ask = Asker()
    split = lambda text: [t.strip() for t in text.split(",") if t.strip()]  # noqa: E731
    fields: dict[str, Any] = {
        "id": ask.one(args.id, "id (e.g. HAZ-01)", "--id"),
        "title": ask.one(args.title, "title (what can go wrong)", "--title"),
        "cause": ask.one(args.cause, "cause (what in the system leads to it)", "--cause"),
        "effect": ask.one(args.effect, "effect on the patient", "--effect"),
        "severity": ask.one(args.severity, f"severity ({', '.join(DCB0129.severity)})", "--severity"),
        "likelihood": ask.one(
            args.likelihood, f"likelihood ({', '.join(DCB0129.likelihood)})", "--likelihood"
        ),
        "control": ask.one(args.control, "control (what keeps it from happening)", "--control"),
        "criteria": split(ask.one(args.criteria, "criteria that verify it, comma-separated", "--criteria")),
        "tags": split(ask.one(args.tags, "scenario tags, comma-separated", "--tags", "")),
        "threshold": ask.one(args.threshold, "threshold (e.g. fail_rate <= 2%)", "--threshold"),
    }
    out = args.out or Path("hazards.yaml")
    write_new(out, _hazard_yaml(fields), args.force)
    try:
        load_hazard_log(out)
    except UserError:
        out.unlink()
        raise
    print(f"wrote {out}; check it against a run with: simulator safety-case RUN --hazards {out}")
    return 0
