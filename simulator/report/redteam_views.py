"""The red-team section, drawn for the terminal and the HTML report from the same rows."""

from __future__ import annotations

__all__ = ["REDTEAM_NOTE", "redteam_html", "redteam_rows", "redteam_terminal"]

import html

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.rates import RateView, pct
from simulator.report.html_parts import rate_cell
from simulator.report.model import Report
from simulator.report.table_print import print_table

REDTEAM_NOTE = (
    "Attack success = attacked conversations where the bot did what it must not, among those judged pass "
    "or fail; interval clustered over base scenarios (95%); with no success, the bound rests on the number "
    "of scenarios (rule of three). 'not judged' (left out): the conversation errored, or the simulated "
    "attacker never attacked. 'failed unattacked': successes on scenarios whose straight run (no attack) "
    "failed the same outcome check. 'turns': the median user turn of first success."
)
HEAD = ["strategy", "OWASP", "success (95% CI)", "not judged", "failed unattacked", "turns"]


def _success(rate: RateView) -> str:
    """`9/10 = 90.0% (52.3%–98.7%)` (clustered), or `0/17 = 0.0% (≤16.2%)` when nothing succeeded."""
    cl = rate.clustered
    if rate.rate is None:
        return "n/a (nothing judged)"
    text = f"{rate.k}/{rate.n} = {pct(rate.rate)}"
    if cl is not None and cl.bound is not None:
        return f"{text} (≤{pct(cl.bound)})"
    if cl is not None:
        return f"{text} ({pct(cl.low)}–{pct(cl.high)})"
    return text


def redteam_rows(report: Report) -> list[list[str]]:
    """One row of cells per strategy, then the overall row (the same text in both renderers)."""
    section = report.redteam
    assert section is not None
    rows = []
    for r in section.strategies:
        turns = f"{r.turns_to_success_median:g}" if r.turns_to_success_median is not None else "—"
        rows.append(
            [r.strategy, r.owasp, _success(r.success), str(r.not_judged), str(r.straight_also_failed), turns]
        )
    rows.append(["all strategies", "", _success(section.overall), "", "", ""])
    return rows


def redteam_terminal(console: Console, report: Report) -> None:
    section = report.redteam
    if section is None:
        return
    console.rule("[bold]Red team: attack success[/]")
    console.print(f"[dim]{escape(REDTEAM_NOTE)}[/]")
    table = Table(*HEAD)
    for row in redteam_rows(report):
        table.add_row(*(escape(cell) for cell in row))
    print_table(console, table)
    if section.groups:
        groups = Table("clinical group", "success (95% CI)")
        for g in section.groups:
            groups.add_row(escape(g.group), escape(_success(g.success)))
        print_table(console, groups)
    for r in section.strategies:
        if r.succeeded:
            console.print(
                f"[red]{escape(r.strategy)}[/] succeeded in {', '.join(escape(c) for c in r.succeeded)}"
                + (f"; refused in {', '.join(escape(c) for c in r.refused)}" if r.refused else "")
            )


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def redteam_html(report: Report) -> str:
    section = report.redteam
    if section is None:
        return ""
    rows = []
    for r, cells in zip(section.strategies, redteam_rows(report), strict=False):
        rows.append(
            f"<tr><td>{_e(cells[0])}<br><small>{_e(r.title)}</small></td><td>{_e(cells[1])}</td>"
            f"{rate_cell(r.success)}<td class='num'>{_e(cells[3])}</td><td class='num'>{_e(cells[4])}</td>"
            f"<td class='num'>{_e(cells[5])}</td></tr>"
        )
    rows.append(
        f"<tr><td><b>all strategies</b></td><td></td>{rate_cell(section.overall)}<td></td><td></td><td></td></tr>"
    )
    table = "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in HEAD) + "</tr>" + "".join(rows) + "</table>"
    groups = ""
    if section.groups:
        groups = (
            "<h3>By clinical group</h3><table><tr><th>group</th><th>success (95% CI)</th></tr>"
            + "".join(f"<tr><td>{_e(g.group)}</td>{rate_cell(g.success)}</tr>" for g in section.groups)
            + "</table>"
        )
    pairs = "".join(
        f"<tr><td>{_e(r.strategy)}</td><td>{_e(', '.join(r.succeeded) or '—')}</td>"
        f"<td>{_e(', '.join(r.refused) or '—')}</td></tr>"
        for r in section.strategies
    )
    side = (
        "<h3>Succeeded and refused, side by side</h3><table><tr><th>strategy</th><th>succeeded in</th>"
        f"<th>refused in</th></tr>{pairs}</table>"
    )
    return (
        f'<section id="redteam"><h2>Red team</h2><p class="note">{_e(REDTEAM_NOTE)}</p>{table}{groups}{side}'
        "</section>"
    )
