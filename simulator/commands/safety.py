"""`safety-case`, `history` and `new hazard`: from runs to a clinical safety case, and its trend over runs."""

from __future__ import annotations

__all__ = ["add_new_hazard", "register"]

import argparse
import sys
from pathlib import Path
from typing import Any

from simulator.commands.outputs import check_output, write_output
from simulator.errors import UserError
from simulator.visible import echo


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
    case.add_argument(
        "--allow-mixed-versions",
        action="store_true",
        help="pool runs that tested different bot versions (refused by default)",
    )
    case.add_argument(
        "--desk",
        type=Path,
        help="the sign-off folder (the desk's --data; default: RUNS/.desk beside the runs)",
    )
    sign = case.add_argument_group("sign-off (as the review desk does)")
    sign.add_argument("--sign", action="store_true", help="record a sign-off of this evidence and archive it")
    sign.add_argument("--name", help="who signs")
    sign.add_argument("--role", help="their role, e.g. Clinical Safety Officer")
    sign.add_argument("--decision", help="approve, reject or 'approve with conditions'")
    sign.add_argument("--comment", default="", help="a comment; the conditions for 'approve with conditions'")
    sign.add_argument(
        "--justification",
        default="",
        help="why approving is acceptable while a hazard is not shown controlled",
    )
    sign.add_argument(
        "--verify",
        action="store_true",
        help="check every sign-off of these runs against the evidence now: exit 1 naming what changed",
    )
    sign.add_argument(
        "--document", type=Path, help="with --verify: check this archived document JSON instead"
    )
    case.set_defaults(handler=cmd_safety_case)

    history = subparsers.add_parser(
        "history",
        help="key rates and hazard bounds across runs in time order, with the paired test between runs",
    )
    history.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="run folders (any order)")
    history.add_argument("--hazards", type=Path, help="a hazard log: add each hazard's bound per run")
    history.add_argument("--html", type=Path, help="write the HTML page with the SVG chart here")
    history.add_argument("--json", type=Path, help="write the history as JSON here")
    history.add_argument("--desk", type=Path, help="sign-offs to mark (default: RUNS/.desk beside the runs)")
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
    log = kinds.add_parser("hazards", help="a whole hazard log shaped as DCB0129 asks, to fill in")
    log.add_argument("--out", type=Path, help="file to write (default hazards.yaml)")
    log.add_argument("--force", action="store_true", help="overwrite an existing file")
    log.set_defaults(handler=cmd_new_hazards)


def cmd_safety_case(args: argparse.Namespace) -> int:
    check_output("--html", args.html)
    check_output("--json", args.json)
    from simulator.report.draw_terminal import draw_sections
    from simulator.safety.case import build_safety_case, load_runs
    from simulator.safety.hazards import load_hazard_log
    from simulator.safety.html import print_pdf, safety_case_html
    from simulator.safety.signoffs import SignOffBook, signoff_views
    from simulator.safety.view import safety_case_sections
    from simulator.visible import terminal_console

    _check_modes(args)
    case = build_safety_case(
        load_runs(args.runs, args.judge_set),
        load_hazard_log(args.hazards),
        allow_mixed_versions=args.allow_mixed_versions,
    )
    desk = args.desk or args.runs[0].resolve().parent / ".desk"
    if args.verify:
        return _verify(desk, case, args.document)
    if args.sign:
        _sign(desk, case, args)
    views = signoff_views(SignOffBook(desk), case.traceability.hazard_log, case.evidence_hash)
    sections = safety_case_sections(case, views)
    draw_sections(
        terminal_console(), sections[:1] if args.quiet else sections[:-1], lines=True, max_details=3
    )
    if args.json:
        write_output(args.json, case.model_dump_json(indent=2) + "\n")
    html = safety_case_html(case, views)
    if args.html:
        write_output(args.html, html)
    if args.pdf:
        print_pdf(html, args.pdf)
    echo(f"evidence {case.evidence_hash}  ·  exit {case.exit_code}", file=sys.stderr)
    return case.exit_code


_SIGN_ONLY = ("--name", "--role", "--decision", "--comment", "--justification")


def _check_modes(args: argparse.Namespace) -> None:
    """Options that mean something only with another are refused without it, never silently ignored."""
    if args.sign and args.verify:
        raise UserError("--sign and --verify: give one of them")
    given = [flag for flag in _SIGN_ONLY if getattr(args, flag[2:])]
    if given and not args.sign:
        raise UserError(
            f"{', '.join(given)} without --sign: nothing would be signed; add --sign to record the sign-off"
        )
    if args.document is not None and not args.verify:
        raise UserError("--document without --verify: add --verify to check that archived document")


def _sign(desk: Path, case: Any, args: argparse.Namespace) -> None:
    """Record a sign-off as the desk does: the same rules, the document archived beside it."""
    from simulator.safety.signing import sign_case

    missing = [
        flag
        for flag, value in (("--name", args.name), ("--role", args.role), ("--decision", args.decision))
        if not value
    ]
    if missing:
        raise UserError(
            f"--sign needs {', '.join(missing)} (e.g. --name 'Dr A Shah' --role 'Clinical Safety Officer' --decision reject)"
        )
    from simulator.names import person_name

    name, role = person_name(args.name, "--name"), person_name(args.role, "--role")
    signoff = sign_case(
        desk, case, name, role, args.decision, args.comment, args.justification, pdf=bool(args.pdf)
    )
    echo(
        f"signed: {signoff.name} ({signoff.role}) {signoff.decision}; document kept at {desk / (signoff.document or '')}",
        file=sys.stderr,
    )


def _verify(desk: Path, case: Any, document: Path | None) -> int:
    """Exit 0 when every sign-off (or the given document) still matches its evidence, 1 naming what changed."""
    from simulator.safety.archive import changes, read_archived, verify_signoffs

    if document is not None:
        found = changes(read_archived(document), case)
        checked = [(str(document), found)]
    else:
        checked = [
            (f"{s.name} ({s.role}, {s.decision}, {s.signed_at.isoformat(timespec='minutes')})", found)
            for s, found in verify_signoffs(desk, case)
        ]
        if not checked:
            raise UserError(
                f"no sign-off of these runs in {desk}: sign first (--sign), or name --desk / --document"
            )
    for who, found in checked:
        if not found:
            echo(f"verified: {who} matches the evidence {case.evidence_hash}")
            continue
        echo(f"CHANGED since {who} signed ({len(found)} differences):")
        for line in found[:20]:
            echo(f"  {line}")
        if len(found) > 20:
            echo(f"  ... and {len(found) - 20} more")
    return 1 if any(found for _, found in checked) else 0


def cmd_history(args: argparse.Namespace) -> int:
    check_output("--html", args.html)
    check_output("--json", args.json)
    from simulator.safety.hazards import load_hazard_log
    from simulator.safety.history import build_history, mark_signed
    from simulator.safety.history_view import history_html, print_history
    from simulator.safety.signoffs import SignOffBook

    log = load_hazard_log(args.hazards) if args.hazards else None
    history = build_history(args.runs, log)
    book = SignOffBook(args.desk or args.runs[0].resolve().parent / ".desk")
    mark_signed(history, [(s.runs, f"{s.name}: {s.decision}") for s in book.all()])
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
    echo(f"wrote {out}; check it against a run with: simulator safety-case RUN --hazards {out}")
    return 0


def cmd_new_hazards(args: argparse.Namespace) -> int:
    from simulator.commands.asking import write_new
    from simulator.commands.hazards_template import HAZARD_LOG_TEMPLATE
    from simulator.safety.hazards import load_hazard_log

    out = args.out or Path("hazards.yaml")
    write_new(out, HAZARD_LOG_TEMPLATE, args.force)
    load_hazard_log(out)  # the template is valid as written (a test keeps it so)
    echo(f"wrote {out}: fill in every line, then: simulator safety-case RUN --hazards {out}")
    return 0
