"""Render one conversation for people: transcript, stop reason, final state and verdicts."""

from __future__ import annotations

__all__ = ["render_conversation"]

import json

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import TextPart, part_text
from simulator.report.table_print import print_table
from simulator.report.visible import visible


def _safe(text: str) -> str:
    """Transcript text for the terminal: control characters visible (never obeyed), markup escaped."""
    return escape(visible(text))


_COLOURS = {
    "pass": "green",
    "fail": "red",
    "error": "magenta",
    "not_applicable": "dim",
    "not_judged": "yellow",
}


def render_conversation(console: Console, record: ConversationRecord, verdicts: list[Verdict]) -> None:
    lines = []
    for turn in record.turns:
        who = "[bold cyan]USER[/]" if turn.role == "user" else "[bold green]BOT [/]"
        timing = f" [dim]({turn.latency_s * 1000:.0f} ms)[/]" if turn.role == "bot" else ""
        for part in turn.parts:
            # Text as it is; options, picks, media, tool calls and events in their one text form, dimmed.
            line = _safe(part_text(part))
            lines.append(f"{who} {line if isinstance(part, TextPart) else f'[dim]{line}[/]'}{timing}")
            timing = ""
    state = _safe(str(record.final_state)) if record.final_state is not None else "[dim]none[/]"
    footer = f"stop reason: [bold]{record.stop_reason}[/]   final state: {state}"
    if record.environment_state is not None:  # a suite with an environment (docs/environment.md)
        footer += f"\nenvironment state: {_safe(json.dumps(record.environment_state, ensure_ascii=False))}"
    if record.error:
        footer += (
            f"\n[magenta]error ({record.error.source}, {record.error.kind}): {_safe(record.error.message)}[/]"
        )
    if record.character_breaks:
        footer += f"\n[yellow]character breaks re-run: {len(record.character_breaks)}[/]"
    body = "\n".join(lines) + "\n\n" + footer
    console.print(
        Panel(body, title=f"{_safe(record.id)}  [dim]{_safe(', '.join(record.tags))}[/]", expand=True)
    )
    if verdicts:
        table = Table("criterion", "result", "evidence ok", "reasoning", show_lines=False)
        for verdict in verdicts:
            colour = _COLOURS.get(verdict.result, "white")
            verified = (
                "" if verdict.evidence_verified is None else ("yes" if verdict.evidence_verified else "NO")
            )
            table.add_row(
                _safe(verdict.criterion_id),
                f"[{colour}]{verdict.result}[/]",
                verified,
                _safe(verdict.reasoning[:160]),
            )
        print_table(console, table)
