"""Sections (report/sections.py) drawn in the terminal with rich: one table each, details listed under it."""

from __future__ import annotations

__all__ = ["print_sections"]

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.report.doc_sections import Section

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "": ""}


MARK = {"ok": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[bold red]✗[/]", "": " "}


def _compact(section: Section, console: Console, max_details: int) -> None:
    """Each row as one wrapped line (a mark for its state, the first cell bold) and a few of its details."""
    for row in section.rows:
        rest = " · ".join(escape(c) for c in row.cells[1:] if c)
        console.print(f"{MARK[row.state]} [bold]{escape(row.cells[0])}[/]  {rest}")
        for line in row.details[:max_details]:
            console.print(f"    [dim]{escape(line)}[/]")
        if len(row.details) > max_details:
            console.print(f"    [dim]… {len(row.details) - max_details} more in the HTML or JSON[/]")


def print_sections(
    sections: list[Section],
    console: Console | None = None,
    details: bool = True,
    compact: bool = False,
    max_details: int = 4,
) -> None:
    """Print each section: a table with the rows' details under it, or (`compact`) a few lines per row."""
    console = console or Console()
    for section in sections:
        console.print(f"\n[bold]{escape(section.title)}[/]")
        for note in section.notes:
            console.print(escape(note))
        if not section.columns:
            continue
        if compact:
            _compact(section, console, max_details if details else 0)
            continue
        table = Table(*section.columns, show_lines=False, expand=False, pad_edge=False)
        for row in section.rows:
            cells = [escape(c) for c in row.cells]
            if cells and row.state:
                cells[-1] = f"[{STYLE[row.state]}]{cells[-1]}[/]"
            table.add_row(*cells)
        console.print(table)
        if details:
            for row in section.rows:
                for line in row.details:
                    console.print(f"  [dim]{escape(row.cells[0])}[/] {escape(line)}", soft_wrap=False)
