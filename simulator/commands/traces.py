"""`import`, `compare-populations`, `draft-scenario` and `export-otel`: real conversations next to simulated ones."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import sys
from pathlib import Path
from typing import Any

from simulator.commands.outputs import check_output, write_output
from simulator.errors import UserError
from simulator.plural import plural
from simulator.visible import echo

MAX_PROBLEMS_PRINTED = 20


def _register_import(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = subparsers.add_parser(
        "import",
        help="import production traces or transcripts into a run folder (judge/report them as usual)",
    )
    imp.add_argument("source", type=Path, help="OTLP JSON traces, a JSONL transcript file or a CSV file")
    imp.add_argument("--out", type=Path, required=True, help="the run folder to create, e.g. runs/real-march")
    imp.add_argument(
        "--format", choices=["otel", "jsonl", "csv"], help="the file's format (default: detected)"
    )
    imp.add_argument("--mapping", type=Path, help="YAML file naming the transcript's fields (JSONL, CSV)")
    imp.add_argument(
        "--conversation-key",
        metavar="ATTR",
        help="attribute (otel) or field (jsonl, csv) that groups messages into conversations "
        "(default gen_ai.conversation.id, then the trace id; conversation_id)",
    )
    imp.add_argument(
        "--redact", type=Path, metavar="FILE", help="redaction file (default: built-in patterns)"
    )
    imp.add_argument(
        "--no-redact", action="store_true", help="no personal-data patterns (credentials are still removed)"
    )
    imp.add_argument(
        "--pseudonym-key",
        type=Path,
        metavar="FILE",
        help="key of the pseudonyms given to conversation ids redaction would change (a collector's "
        ".collect/pseudonym.key, say), so they agree across imports; default: a fresh key per import",
    )
    imp.add_argument("--exclude-system", action="store_true", help="do not keep system prompts")
    imp.add_argument("--suite", type=Path, help="attach this suite's judges and outcome levels to the run")
    imp.add_argument(
        "--expected-attribute",
        metavar="ATTR",
        help="otel: span attribute holding the conversation's expected outcome level (needs --suite), as "
        "in collect: under- and over-triage against it (docs/outcome-sources.md)",
    )
    imp.add_argument(
        "--decision-tool", default="record_decision", help="tool whose call arguments are the bot's decision"
    )
    imp.set_defaults(handler=cmd_import)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _register_import(subparsers)

    pop = subparsers.add_parser(
        "compare-populations",
        help="simulated users against real ones: where the simulation is not like reality",
    )
    pop.add_argument("sim_run", type=Path, help="a simulated run folder")
    pop.add_argument("real_run", type=Path, help="an imported run folder of real conversations")
    pop.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    pop.add_argument("--json", type=Path, help="write the comparison as JSON here")
    pop.set_defaults(handler=cmd_compare_populations)

    draft = subparsers.add_parser(
        "draft-scenario", help="draft a scenario (persona, goal, facts) from a real conversation, for review"
    )
    draft.add_argument("run", type=Path, help="an imported run folder")
    draft.add_argument(
        "--conversation", required=True, metavar="ID", help="the conversation (id or scenario id)"
    )
    draft.add_argument(
        "--model",
        help="model that writes the draft, e.g. anthropic:claude-sonnet-4-5 (default: offline extraction)",
    )
    draft.add_argument("--suite", type=Path, help="take provider settings (base_url, keys) from this suite")
    draft.add_argument("--out", type=Path, help="write the draft here (default: print it)")
    draft.set_defaults(handler=cmd_draft_scenario)

    export = subparsers.add_parser(
        "export-otel",
        help="a run's conversations as GenAI spans and its verdicts as evaluation events (OTLP)",
    )
    export.add_argument("run", type=Path, help="runs/<run-id>")
    where = export.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="write OTLP JSON to this file")
    where.add_argument("--endpoint", help="send over OTLP/HTTP, e.g. http://localhost:4318")
    export.set_defaults(handler=cmd_export_otel)


def cmd_import(args: argparse.Namespace) -> int:
    from simulator.traces.importer import ImportOptions, import_source

    if args.redact and args.no_redact:
        raise UserError("--redact and --no-redact contradict each other; pass one")
    summary = import_source(
        ImportOptions(
            source=args.source,
            out=args.out,
            format=args.format,
            mapping=args.mapping,
            conversation_key=args.conversation_key,
            redact=args.redact,
            no_redact=args.no_redact,
            exclude_system=args.exclude_system,
            suite=args.suite,
            decision_tool=args.decision_tool,
            expected_attribute=args.expected_attribute,
            pseudonym_key=args.pseudonym_key,
        )
    )
    for problem in (summary.problems + summary.skipped)[:MAX_PROBLEMS_PRINTED]:
        echo(f"skipped: {problem}", file=sys.stderr)
    hidden = len(summary.problems) + len(summary.skipped) - MAX_PROBLEMS_PRINTED
    if hidden > 0:
        echo(f"... and {hidden} more (all listed in the manifest's source.problems)", file=sys.stderr)
    for fix, calls in summary.silence.items():
        echo(
            f"left out: {calls} LLM calls recorded without their messages; to keep them, {fix}",
            file=sys.stderr,
        )
    for warning in summary.warnings:
        echo(f"warning: {warning}", file=sys.stderr)
    redacted = ", ".join(f"{k} {v}" for k, v in sorted(summary.redactions.items())) or "nothing"
    echo(
        f"imported {plural(summary.conversations, 'conversation')} ({plural(summary.turns, 'turn')}) from {summary.records} "
        f"{summary.format} records; skipped {len(summary.problems)} malformed records and "
        f"{plural(len(summary.skipped), 'conversation')}; redacted: {redacted}"
    )
    echo(f"run folder: {summary.folder}")
    echo(f"next: simulator judge {summary.folder} --suite SUITE   ·   simulator report {summary.folder}")
    return 0


def _print_simulators(result: Any) -> None:
    """Several simulated users: each one's mean gap to the real conversations, closest first."""
    if not result.simulators:
        return
    echo(
        "simulated users against the real conversations (the mean of the measures' gaps, each 0-1; "
        "lower is closer):"
    )
    for s in result.simulators:
        differ = (
            f"; differs on {len(s.differing)} ({', '.join(s.differing)})"
            if s.differing
            else "; no measure differs"
        )
        echo(
            f"  {s.level} ({s.model}, {plural(s.conversations, 'conversation')}): mean gap {s.mean_gap:.2f}{differ}"
        )
    echo(f"closest to the real users: {result.closest}")


def cmd_compare_populations(args: argparse.Namespace) -> int:
    check_output("--json", args.json)
    from simulator.analysis.populations import compare_populations
    from simulator.report.draw_terminal import draw_table
    from simulator.report.section import Column, Table
    from simulator.visible import terminal_console

    result = compare_populations(args.sim_run, args.real_run, args.alpha)
    names = ("measure", "simulated", "real", "gap", "difference", "p")
    table = Table([Column(n, numeric=n in ("gap", "p")) for n in names], title="simulated vs real users")
    for row in result.rows:
        flag = " *" if row.p < result.alpha else ""
        table.add(
            f"{row.measure} ({row.unit})",
            row.simulated,
            row.real,
            f"{row.gap:.2f}",
            row.difference,
            f"{row.p:.3g}{flag}",
        )
    draw_table(terminal_console(), table)  # the report's layout: fits 80 columns in a pipe, nothing cut
    echo(
        "gap: KS distance (distributions), |difference| (rates), total variation (stop reasons); largest first"
    )
    different = [row.measure for row in result.rows if row.p < result.alpha]
    if different:
        echo(f"not like reality (p < {result.alpha}, *): " + "; ".join(different))
    else:
        echo(
            f"no measure differs at p < {result.alpha} (with small samples that is weak evidence of likeness)"
        )
    echo(result.unit)
    for note in result.left_out:
        echo(f"left out: {note}")
    _print_simulators(result)
    if args.json:
        write_output(args.json, result.model_dump_json(indent=2) + "\n")
        echo(f"JSON {args.json}")
    return 0


def cmd_draft_scenario(args: argparse.Namespace) -> int:
    from simulator.eventloop import run_async
    from simulator.traces.draft import draft_from_run, draft_yaml

    record, fields, how = run_async(draft_from_run(args.run, args.conversation, args.model, args.suite))
    text = draft_yaml(record, fields, how)
    if args.out is None:
        echo(text, end="")
        return 0
    if args.out.exists():
        raise UserError(f"--out {args.out}: the file exists; name a new file (drafts never overwrite)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_output(args.out, text)
    echo(f"draft scenario written to {args.out} (draft: true; `simulator run` refuses it until reviewed)")
    return 0


def cmd_export_otel(args: argparse.Namespace) -> int:
    from simulator.traces.export import export_run

    conversations, events = export_run(args.run, args.out, args.endpoint)
    target = args.out or args.endpoint
    echo(f"exported {plural(conversations, 'conversation')} and {events} evaluation events to {target}")
    return 0
