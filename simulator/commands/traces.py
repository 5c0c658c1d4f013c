"""`import`, `compare-populations`, `draft-scenario` and `export-otel`: real conversations next to simulated ones."""

from __future__ import annotations

__all__ = ["register"]

import argparse
import sys
from pathlib import Path

from simulator.errors import UserError

MAX_PROBLEMS_PRINTED = 20


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    imp.add_argument("--no-redact", action="store_true", help="write the text as it is (no redaction)")
    imp.add_argument("--exclude-system", action="store_true", help="do not keep system prompts")
    imp.add_argument("--suite", type=Path, help="attach this suite's judges and outcome levels to the run")
    imp.add_argument(
        "--decision-tool", default="record_decision", help="tool whose call arguments are the bot's decision"
    )
    imp.set_defaults(handler=cmd_import)


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
        )
    )
    for problem in (summary.problems + summary.skipped)[:MAX_PROBLEMS_PRINTED]:
        print(f"skipped: {problem}", file=sys.stderr)
    hidden = len(summary.problems) + len(summary.skipped) - MAX_PROBLEMS_PRINTED
    if hidden > 0:
        print(f"... and {hidden} more (all listed in the manifest's source.problems)", file=sys.stderr)
    redacted = ", ".join(f"{k} {v}" for k, v in sorted(summary.redactions.items())) or "nothing"
    print(
        f"imported {summary.conversations} conversations ({summary.turns} turns) from {summary.records} "
        f"{summary.format} records; skipped {len(summary.problems)} malformed records and "
        f"{len(summary.skipped)} conversations; redacted: {redacted}"
    )
    print(f"run folder: {summary.folder}")
    print(f"next: simulator judge {summary.folder} --suite SUITE   ·   simulator report {summary.folder}")
    return 0
