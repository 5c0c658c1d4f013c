"""The one terminal renderer of report sections (section.py): rich tables printed so nothing is cut
(table_print.py), states as colours, every string escaped as rich markup."""

from __future__ import annotations

__all__ = ["draw_lines", "draw_section", "draw_sections", "draw_table"]

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table as RichTable

from simulator.report.section import Cell, Column, Figures, Findings, Note, Section, State, Table
from simulator.report.table_print import print_table
from simulator.visible import visible_markup as escape

STYLE: dict[State, str] = {"fail": "red", "warn": "yellow", "ok": "green", "error": "magenta"}
_LEVEL_STYLE = {"bug": "bold red", "warning": "yellow", "info": "cyan"}
MARK: dict[State, str] = {
    "ok": "[green]✓[/]",
    "warn": "[yellow]![/]",
    "fail": "[bold red]✗[/]",
    "error": "[magenta]![/]",
}


def _markup(cell: Cell) -> str:
    shown = escape(cell.text)
    if cell.strong:
        shown = f"[bold]{shown}[/]"
    return f"[{STYLE[cell.state]}]{shown}[/]" if cell.state else shown


def _folded(columns: list[Column]) -> list[tuple[str, bool, list[int], str]]:
    """The terminal's columns: (header, numeric, source column indexes, separator); a group is one."""
    out: list[tuple[str, bool, list[int], str]] = []
    for i, column in enumerate(columns):
        if column.group is not None and out and out[-1][0] == column.group and i - 1 in out[-1][2]:
            out[-1][2].append(i)
        else:
            out.append(
                (column.group or column.name, column.numeric and column.group is None, [i], column.sep)
            )
    return out


def draw_table(console: Console, table: Table) -> None:
    """One table; a row's state colours the whole row; a table with no rows is its title alone."""
    if not table.rows:
        console.print(escape(table.title))
        _collapsed(console, table)
        return
    folded = _folded(table.columns)
    rich = RichTable(title=escape(table.title) if table.title else None, title_justify="left")
    for header, numeric, _, _ in folded:
        rich.add_column(escape(header), justify="right" if numeric else "left")
    shown = table.rows if table.fold_after is None else table.rows[: table.fold_after]
    for row in shown:
        # A group's empty cells are left out of its joined cell (a metric row has no counts).
        cells = [
            sep.join(_markup(row.cells[i]) for i in indexes if row.cells[i].text)
            for _, _, indexes, sep in folded
        ]
        rich.add_row(*cells, style=STYLE[row.state] if row.state else None)
    print_table(console, rich)
    if len(shown) < len(table.rows):
        console.print(f"[dim]and {len(table.rows) - len(shown)} more rows in the HTML and JSON reports[/]")
    for row in shown:
        for line in row.details:
            console.print(f"  [dim]{escape(row.cells[0].text)}[/] {escape(line)}", soft_wrap=False)
    _collapsed(console, table)


def _collapsed(console: Console, table: Table) -> None:
    """The one line standing for the rows that passed alike."""
    if table.collapsed_note:
        console.print(f"[green]{escape(table.collapsed_note)}[/] [dim]· report --all lists them[/]")


TERMINAL_LINKS = 3  # conversations named under a finding in the terminal; the line says how many more


def _findings(console: Console, findings: Findings) -> None:
    """BUG, WARNING and INFO lines, the level coloured, the detail dim."""
    if not findings.lines:
        console.print(f"[green]{escape(findings.empty)}[/]")
    for line in findings.lines:
        detail = f" [dim]— {escape(line.detail)}[/]" if line.detail else ""
        console.print(f"[{_LEVEL_STYLE[line.level]}]{line.level.upper():8}[/] {escape(line.title)}{detail}")
        if line.links:  # the first few on the first screen; the HTML links every one it lists
            shown = line.links[:TERMINAL_LINKS]
            more = line.left_out + len(line.links) - len(shown)
            tail = f" and {more} more" if more else ""
            console.print(f"         [dim]read: {escape(', '.join(c for c, _ in shown))}{tail}[/]")


def _figures(console: Console, figures: Figures) -> None:
    """One line per figure: the label (bold and coloured by state when critical), the value, the sub line;
    a critical figure's note (how far errors could move it) on the same line, a calm one's under it."""
    for f in figures.figures:
        style = STYLE[f.state] if f.state else ""
        label = f"[bold {style}]{escape(f.label)}[/]" if figures.critical else escape(f.label)
        value = f"[{style}]{escape(f.value)}[/]" if style else escape(f.value)
        sub = f" [dim]· {escape(f.sub)}[/]" if f.sub else ""
        beside = f" [yellow]· {escape(f.note)}[/]" if figures.critical and f.note else ""
        console.print(f"{label} {value}{sub}{beside}")
        if f.note and not figures.critical:
            console.print(f"  [dim]{escape(f.note)}[/]")


def draw_lines(console: Console, table: Table, max_details: int | None = None) -> None:
    """A table as one wrapped line per row (a mark for its state, the first cell bold, the rest joined) and
    the first `max_details` of its details: for documents whose rows hold long text (the safety case)."""
    for row in table.rows:
        mark = MARK[row.state] if row.state else " "
        rest = " · ".join(escape(c.text) for c in row.cells[1:] if c.text)
        console.print(f"{mark} [bold]{escape(row.cells[0].text)}[/]  {rest}")
        shown = row.details if max_details is None else row.details[:max_details]
        for line in shown:
            console.print(f"    [dim]{escape(line)}[/]")
        if len(shown) < len(row.details):
            console.print(f"    [dim]… {len(row.details) - len(shown)} more in the HTML or JSON[/]")


def _note(console: Console, note: Note) -> None:
    shown = escape(note.text)
    if note.state:
        shown = f"[{STYLE[note.state]}]{shown}[/]"
    lead = f"[bold]{escape(note.lead)}[/] " if note.lead else ""
    console.print(lead + shown)


def draw_section(
    console: Console, section: Section, *, lines: bool = False, max_details: int | None = None
) -> None:
    """The section's title in bold, then its tables and notes in order; nothing for an empty section.
    `lines` draws each table as one line per row (draw_lines), with up to `max_details` details each."""
    if section.empty:
        return
    title = escape(section.title)
    console.print(f"\n[bold {STYLE[section.state]}]{title}[/]" if section.state else f"\n[bold]{title}[/]")
    for block in section.blocks:
        if isinstance(block, Table) and lines:
            draw_lines(console, block, max_details)
        elif isinstance(block, Table):
            draw_table(console, block)
        elif isinstance(block, Findings):
            _findings(console, block)
        elif isinstance(block, Figures):
            _figures(console, block)
        else:
            _note(console, block)


def draw_sections(
    console: Console, sections: Iterable[Section], *, lines: bool = False, max_details: int | None = None
) -> None:
    for section in sections:
        draw_section(console, section, lines=lines, max_details=max_details)
