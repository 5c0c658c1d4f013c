"""The section model (report/section.py) and its two renderers: a section written once is drawn by the
terminal and by HTML with the same rows; HTML escapes every string; the terminal never reads text as
markup; a column group folds into one terminal column; long tables fold in the terminal only."""

from __future__ import annotations

import io
import re
from html import escape as html_escape
from pathlib import Path

import pytest
from rich.console import Console

from simulator.analysis.rundata import load_run
from simulator.report.draw_html import html_section
from simulator.report.draw_terminal import draw_section
from simulator.report.model import build_report
from simulator.report.section import (
    COUNT_COLUMNS,
    Column,
    Note,
    Section,
    Table,
    count_cells,
    number,
    rate_cell,
    text,
)
from simulator.report.sections import report_sections
from simulator.stats.rates import rate_view
from tests.test_report_support import SCRIPT, make_judged_run

HOSTILE = [SCRIPT, '"><img src=x onerror=alert(1)>', "[red]not markup[/red] [link=https://x.example]l[/link]"]


def _terminal(section: Section, width: int = 200) -> str:
    buffer = io.StringIO()
    draw_section(Console(file=buffer, width=width, color_system=None), section)
    return buffer.getvalue()


def _hostile_section(hostile: str) -> Section:
    table = Table([Column(hostile), Column("n", numeric=True)], title=hostile)
    table.add(text(hostile, "fail", link=f"#{hostile}"), number(3))
    table.add(hostile, number(4), state="warn")
    return Section(hostile, hostile, [Note(hostile, "warn", lead=hostile), table])


@pytest.mark.parametrize("hostile", HOSTILE)
def test_html_escapes_every_string_of_a_section(hostile: str) -> None:
    page = html_section(_hostile_section(hostile))
    assert "<script" not in page and "<img" not in page
    inside = re.sub(r"<[^>]+>", "", page)  # the text the browser shows, still entity-escaped
    assert "<" not in inside and ">" not in inside
    assert page.count('class="st-fail"') == 1 and '<tr class="st-warn">' in page


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_terminal_shows_text_as_text(hostile: str) -> None:
    shown = _terminal(_hostile_section(hostile))
    assert shown.count(hostile) >= 4  # title, table title, header or cells and the note: never markup


def test_a_section_written_once_draws_the_same_rows_in_both() -> None:
    rate = rate_view(3, 40)
    table = Table([Column("case"), *COUNT_COLUMNS, Column("failure rate")], title="A new section's table")

    class Counts:
        passed, failed, not_applicable, error, not_judged = 30, 3, 4, 2, 1

    table.add("case-1", *count_cells(Counts()), rate_cell(rate))
    section = Section("new", "A new section", [Note("what it shows"), table])
    terminal, page = _terminal(section), html_section(section)
    assert "A new section" in terminal and '<section id="new"><h2>A new section</h2>' in page
    assert "30/3/4/2/1" in terminal  # the count group folds into one narrow column
    assert (
        page.count('<td class="num') == 5 and len(re.findall(r"<th[ >]", page)) == 1 + 5 + 1
    )  # HTML: a column each
    assert rate.short in terminal and "<svg" in page and f"{rate.k}/{rate.n}" in page


def test_a_long_table_folds_in_the_terminal_only() -> None:
    table = Table([Column("row")], fold_after=3)
    for i in range(10):
        table.add(f"row-{i}")
    section = Section("long", "Long", [table])
    terminal, page = _terminal(section), html_section(section)
    assert "row-2" in terminal and "row-3" not in terminal and "and 7 more rows" in terminal
    assert all(f"row-{i}" in page for i in range(10))


def test_an_empty_section_draws_nothing() -> None:
    assert html_section(Section("x", "X")) == "" and _terminal(Section("x", "X")) == ""


def test_every_report_section_is_drawn_by_both_renderers(tmp_path: Path) -> None:
    report = build_report(load_run(make_judged_run(tmp_path)))
    for section in report_sections(report):
        if section.empty:
            continue
        terminal, page = _terminal(section, width=300), html_section(section)
        assert section.title in terminal and f'<section id="{section.id}">' in page
        for block in section.blocks:
            if isinstance(block, Table):
                assert page.count("<table>") >= 1
                for row in block.rows[: block.fold_after]:
                    words = row.cells[0].text.split()
                    assert not words or words[0] in terminal  # the same rows, row by row
                    assert all(html_escape(cell.text) in page for cell in row.cells if cell.rate is None)
