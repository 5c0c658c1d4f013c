"""The one HTML renderer of report sections (section.py): every title, header, cell and note is escaped;
rates get their interval plot; states become classes the report's CSS colours."""

from __future__ import annotations

__all__ = ["html_section", "html_sections", "html_table"]

from collections.abc import Iterable

from simulator.report.html_parts import e, rate_cell
from simulator.report.section import Cell, Column, Note, Row, Section, Table


def _cell(cell: Cell, column: Column) -> str:
    if cell.rate is not None:
        return rate_cell(cell.rate, plot=cell.plot)
    classes = " ".join(
        c for c in ("num" if column.numeric else "", f"st-{cell.state}" if cell.state else "") if c
    )
    shown = e(cell.text)
    if cell.strong:
        shown = f"<strong>{shown}</strong>"
    if cell.link:
        shown = f'<a href="{e(cell.link)}">{shown}</a>'
    return f'<td class="{classes}">{shown}</td>' if classes else f"<td>{shown}</td>"


def html_table(table: Table) -> str:
    """`<h3>` with the title when there is one, then the table (none when it has no rows)."""
    head = "".join(
        f'<th class="num">{e(c.name)}</th>' if c.numeric else f"<th>{e(c.name)}</th>" for c in table.columns
    )
    rows = "".join(_row(row, table.columns) for row in table.rows)
    title = f"<h3>{e(table.title)}</h3>" if table.title else ""
    # thead: a printed document repeats the header on every page.
    return (
        f"{title}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>" if table.rows else title
    )


def _row(row: Row, columns: list[Column]) -> str:
    """A row, and its details (if any) as one cell across the table under it."""
    cells = "".join(_cell(cell, column) for cell, column in zip(row.cells, columns, strict=True))
    out = (f'<tr class="st-{row.state}">' if row.state else "<tr>") + cells + "</tr>"
    if row.details:
        body = "".join(f"<p>{e(d)}</p>" for d in row.details)
        out += f'<tr class="details"><td colspan="{len(columns)}">{body}</td></tr>'
    return out


def _note(note: Note) -> str:
    lead = f"<strong>{e(note.lead)}</strong> " if note.lead else ""
    return f'<p class="{"warning" if note.state else "note"}">{lead}{e(note.text)}</p>'


def html_section(section: Section) -> str:
    """`<section id=…>` with its `<h2>`, or '' for an empty section."""
    if section.empty:
        return ""
    body = "".join(html_table(b) if isinstance(b, Table) else _note(b) for b in section.blocks)
    return f'<section id="{e(section.id)}"><h2>{e(section.title)}</h2>{body}</section>'


def html_sections(sections: Iterable[Section]) -> str:
    return "".join(html_section(s) for s in sections)
