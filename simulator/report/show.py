"""Render one conversation for people: transcript, stop reason, final state and verdicts."""

from __future__ import annotations

__all__ = ["render_conversation"]

import json

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from simulator.plural import plural
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import TextPart, part_text
from simulator.report.table_print import print_table
from simulator.report.verdict_order import group_verdicts, tally
from simulator.visible import visible

# What one screen can show: `show` stays a second's work on any record (100,000 parts, a 5 MB tool
# argument); what it leaves out it says, and the record keeps it all.
MAX_PARTS_SHOWN = 200  # parts of one turn
MAX_CHARS_SHOWN = 4_000  # characters of one part, a final state or an environment state


def _safe(text: str, limit: int = MAX_CHARS_SHOWN) -> str:
    """Transcript text for the terminal: control characters visible (never obeyed), markup escaped, cut
    at `limit` characters saying how many more there are."""
    if len(text) <= limit:
        return escape(visible(text))
    return escape(visible(text[:limit])) + f"[dim] … ({len(text) - limit:,} more characters)[/]"


_COLOURS = {
    "pass": "green",
    "fail": "red",
    "error": "magenta",
    "not_applicable": "dim",
    "not_judged": "yellow",
}


def render_conversation(
    console: Console, record: ConversationRecord, verdicts: list[Verdict], show_all: bool = False
) -> None:
    """The transcript in a panel, then its verdicts: what failed expanded, the rest counted (`show_all`:
    every verdict)."""
    lines = []
    for turn in record.turns:
        who = "[bold cyan]USER[/]" if turn.role == "user" else "[bold green]BOT [/]"
        timing = f" [dim]({turn.latency_s * 1000:.0f} ms)[/]" if turn.role == "bot" else ""
        parts = turn.parts
        for part in parts[:MAX_PARTS_SHOWN]:
            # Text as it is; options, picks, media, tool calls and events in their one text form, dimmed.
            line = _safe(part_text(part))
            lines.append(f"{who} {line if isinstance(part, TextPart) else f'[dim]{line}[/]'}{timing}")
            timing = ""
        if len(parts) > MAX_PARTS_SHOWN:
            lines.append(
                f"{who} [dim]… {len(parts) - MAX_PARTS_SHOWN:,} more parts in this turn (the record keeps them)[/]"
            )
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
    _verdicts(console, verdicts, show_all)


def _table(console: Console, title: str, verdicts: list[Verdict], whole: bool) -> None:
    """The verdicts as rows; `whole` prints the reasoning in full (a failure), else its first 160 characters."""
    if not verdicts:
        return
    table = Table("criterion", "result", "evidence ok", "reasoning", title=title, title_justify="left")
    for verdict in verdicts:
        colour = _COLOURS.get(verdict.result, "white")
        verified = "" if verdict.evidence_verified is None else ("yes" if verdict.evidence_verified else "NO")
        reasoning = verdict.reasoning if whole else verdict.reasoning[:160]
        table.add_row(
            _safe(verdict.criterion_id), f"[{colour}]{verdict.result}[/]", verified, _safe(reasoning)
        )
    print_table(console, table)


def _verdicts(console: Console, verdicts: list[Verdict], show_all: bool) -> None:
    """What failed or errored, expanded, the bot's before the simulated user's own checks; what passed or
    was skipped as one line of counts (`--all` lists every verdict)."""
    if not verdicts:
        return
    groups = group_verdicts(verdicts)
    on_bot, on_user = "Verdicts on the bot", "The simulated user's own checks (fidelity: was the test fair?)"
    if show_all:
        _table(console, on_bot, [*groups.bot_attention, *groups.bot_rest], whole=True)
        _table(console, on_user, [*groups.simulator_attention, *groups.simulator_rest], whole=True)
        return
    _table(console, f"{on_bot}: what failed", groups.bot_attention, whole=True)
    _table(console, f"{on_user}: what failed", groups.simulator_attention, whole=True)
    lines = []
    if groups.bot_rest:
        lines.append(f"bot: {tally(groups.bot_rest)}")
    if groups.simulator_rest:
        lines.append(f"simulated user's checks: {tally(groups.simulator_rest)}")
    if not groups.bot_attention and not groups.simulator_attention:
        console.print(f"[green]no verdict failed or errored ({plural(len(verdicts), 'verdict')})[/]")
    if lines:
        console.print(f"[dim]not listed: {_safe('; '.join(lines))} (--all lists them)[/]", overflow="fold")
