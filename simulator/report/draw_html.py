"""The one HTML renderer of report sections (section.py): every title, header, cell and note is escaped;
rates get their interval plot; states become classes the report's CSS colours."""

from __future__ import annotations

__all__ = ["html_section", "html_sections", "html_table"]

from collections.abc import Iterable

from simulator.report.html_parts import ci_plot, e, rate_cell
from simulator.report.section import (
    Block,
    Cell,
    Column,
    Figure,
    Figures,
    FindingLine,
    Findings,
    Note,
    Row,
    Section,
    Table,
)


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
    """`<h3>` with the title when there is one, then the table (none when it has no rows); rows collapsed
    as all passing alike follow as one line that opens onto them."""
    head = "".join(
        f'<th class="num">{e(c.name)}</th>' if c.numeric else f"<th>{e(c.name)}</th>" for c in table.columns
    )
    title = f"<h3>{e(table.title)}</h3>" if table.title else ""
    collapsed = ""
    if table.collapsed_note:
        collapsed = (
            f'<details class="collapsed"><summary>{e(table.collapsed_note)}</summary>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{_rows(table.collapsed, table.columns)}</tbody></table>"
            "</details>"
        )
    if not table.rows:
        return title + collapsed
    # thead: a printed document repeats the header on every page.
    rows = _rows(table.rows, table.columns)
    return f"{title}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{collapsed}"


def _rows(rows: list[Row], columns: list[Column]) -> str:
    return "".join(_row(row, columns) for row in rows)


def _row(row: Row, columns: list[Column]) -> str:
    """A row, and its details (if any) as one cell across the table under it."""
    cells = "".join(_cell(cell, column) for cell, column in zip(row.cells, columns, strict=True))
    out = (f'<tr class="st-{row.state}">' if row.state else "<tr>") + cells + "</tr>"
    if row.details or row.links:
        body = "".join(f"<p>{e(d)}</p>" for d in row.details)
        if row.links:
            named = ", ".join(f'<a href="{e(link)}">{e(name)}</a>' for name, link in row.links)
            body += f"<p>read: {named}</p>"
        out += f'<tr class="details"><td colspan="{len(columns)}">{body}</td></tr>'
    return out


def _links(line: FindingLine) -> str:
    """The conversations to read under a finding, each a link to its transcript when the page holds it."""
    if not line.links:
        return ""
    named = ", ".join(f'<a href="{e(a)}">{e(c)}</a>' if a else e(c) for c, a in line.links)
    more = f" and {line.left_out} more" if line.left_out else ""
    return f" <span class=detail>· read: {named}{more}</span>"


def _findings(findings: Findings) -> str:
    items = "".join(
        f'<li class="{f.level}"><span class="lvl">{f.level.upper()}</span>{e(f.title)}'
        f"{f' <span class=detail>— {e(f.detail)}</span>' if f.detail else ''}{_links(f)}</li>"
        for f in findings.lines
    )
    return f'<ul class="findings">{items or f"<li class=info>{e(findings.empty)}</li>"}</ul>'


def _figure(figure: Figure, critical: bool) -> str:
    state = f" st-{figure.state}" if figure.state else ""
    plot = ci_plot(figure.rate, state=figure.state) if critical and figure.rate is not None else ""
    if not figure.note:
        beside = note = ""
    elif critical:  # how far errors could move it: right under the value
        beside, note = f'<div class="moved">{e(figure.note)}</div>', ""
    else:
        beside, note = "", f'<div class="sub">{e(figure.note)}</div>'
    return (
        f'<div class="card{state}"><div class="label">{e(figure.label)}</div>'
        f'<div class="value">{e(figure.value)}</div>{beside}{plot}<div class="sub">{e(figure.sub)}</div>{note}</div>'
    )


def _figures(figures: Figures) -> str:
    kind = "cards critical" if figures.critical else "cards"
    return f'<div class="{kind}">{"".join(_figure(f, figures.critical) for f in figures.figures)}</div>'


def _block(block: Block) -> str:
    if isinstance(block, Table):
        return html_table(block)
    if isinstance(block, Findings):
        return _findings(block)
    if isinstance(block, Figures):
        return _figures(block)
    return _note(block)


def _note(note: Note) -> str:
    lead = f"<strong>{e(note.lead)}</strong> " if note.lead else ""
    return f'<p class="{"warning" if note.state else "note"}">{lead}{e(note.text)}</p>'


def html_section(section: Section) -> str:
    """`<section id=…>` with its `<h2>`, or '' for an empty section."""
    if section.empty:
        return ""
    body = "".join(_block(b) for b in section.blocks)
    return f'<section id="{e(section.id)}"><h2>{e(section.title)}</h2>{body}</section>'


def html_sections(sections: Iterable[Section]) -> str:
    return "".join(html_section(s) for s in sections)
