"""The behavioural relations section, drawn for the terminal and the HTML report from the same rows."""

from __future__ import annotations

__all__ = [
    "RELATIONS_NOTE",
    "relations_html",
    "relations_rows",
    "relations_terminal",
    "split_html",
    "split_rows",
    "split_terminal",
]

import html

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.rates import RateView, pct
from simulator.analysis.relations import RelationRow, ViolatingPair
from simulator.report.html_parts import rate_cell
from simulator.report.model import Report
from simulator.report.table_print import print_table

RELATIONS_NOTE = (
    "Each relation is its own test suite, reported apart, never averaged. Invariance/directional: violations "
    "among decided pairs (a variant and its reference variant, same scenario and repeat); mft: failed "
    "conversations of the named scenarios. 95% interval clustered over base scenarios; with no violation, "
    "the bound over the scenarios. Undecided pairs (an error, no outcome) are left out."
)
HEAD = ["relation", "kind", "pass rate", "violations (95% CI)", "undecided"]


def _violations(rate: RateView) -> str:
    cl = rate.clustered
    if rate.rate is None:
        return "n/a (nothing decided)"
    text = f"{rate.k}/{rate.n} = {pct(rate.rate)}"
    if cl is not None and cl.bound is not None:
        return f"{text} (≤{pct(cl.bound)})"
    if cl is not None:
        return f"{text} ({pct(cl.low)}–{pct(cl.high)})"
    return text


def relations_rows(report: Report) -> list[list[str]]:
    section = report.relations
    assert section is not None
    rows = []
    for r in section.rows:
        kind = r.kind + (f" ({r.expect.replace('_', ' ')})" if r.expect else "")
        passed = "n/a" if r.pass_rate is None else pct(r.pass_rate)
        rows.append([r.id, kind, passed, _violations(r.violations), str(r.undecided)])
    return rows


def _pair_text(row: RelationRow, pair: ViolatingPair) -> str:
    """`suicidal-ideation-07 repeat 0: as written → emergency; speaker=relative-speaks → gp`."""
    if row.kind == "mft":
        return f"{pair.base} repeat {pair.repeat} failed ({pair.variant_id})"
    return (
        f"{pair.base} repeat {pair.repeat}: as written → {pair.reference_outcome}; "
        f"{row.factor}={pair.level} → {pair.variant_outcome}"
    )


def relations_terminal(console: Console, report: Report) -> None:
    section = report.relations
    if section is None:
        return
    console.rule("[bold]Behavioural relations[/]")
    console.print(f"[dim]{escape(RELATIONS_NOTE)}[/]")
    table = Table(*HEAD)
    for cells in relations_rows(report):
        table.add_row(*(escape(c) for c in cells))
    print_table(console, table)
    for r in section.rows:
        for pair in r.violating:
            console.print(f"[red]{escape(r.id)}[/] violated: {escape(_pair_text(r, pair))}")


def relations_html(report: Report) -> str:
    section = report.relations
    if section is None:
        return ""
    e = html.escape
    rows = []
    for r, cells in zip(section.rows, relations_rows(report), strict=True):
        rows.append(
            f"<tr><td>{e(cells[0])}<br><small>{e(r.description)}</small></td><td>{e(cells[1])}</td>"
            f"<td class='num'>{e(cells[2])}</td>{rate_cell(r.violations)}<td class='num'>{e(cells[4])}</td></tr>"
        )
    table = "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in HEAD) + "</tr>" + "".join(rows) + "</table>"
    pairs = "".join(
        f"<tr><td>{e(_pair_text(r, p))}</td><td><small>{e(p.reference_id)}</small>"
        f"<pre class='pair'>{e(p.reference_transcript)}</pre></td><td><small>{e(p.variant_id)}</small>"
        f"<pre class='pair'>{e(p.variant_transcript)}</pre></td></tr>"
        for r in section.rows
        for p in r.violating
    )
    side = (
        "<h3>Violating pairs, side by side</h3><table><tr><th>relation</th><th>reference</th><th>variant</th></tr>"
        f"{pairs}</table>"
        if pairs
        else ""
    )
    return (
        f'<section id="relations"><h2>Behavioural relations</h2><p class="note">{e(RELATIONS_NOTE)}</p>'
        f"{table}{side}</section>"
    )


SPLIT_HEAD = ["metric", "tuned", "held-out", "gap"]


def _rate_text(rate: RateView) -> str:
    if rate.rate is None:
        return "n/a"
    cl = rate.clustered
    ci = f"{pct(cl.low)}–{pct(cl.high)}" if cl is not None else f"{pct(rate.low)}–{pct(rate.high)}"
    return f"{rate.k}/{rate.n} = {pct(rate.rate)} ({ci})"


def split_rows(report: Report) -> list[list[str]]:
    section = report.split
    assert section is not None
    return [
        [r.metric, _rate_text(r.tuned), _rate_text(r.held_out), "GAP" if r.gap else "—"] for r in section.rows
    ]


def _split_title(report: Report) -> str:
    section = report.split
    assert section is not None
    state = "sealed" if section.sealed else "unsealed"
    return (
        f"Tuned set ({section.tuned_scenarios} scenarios) against the {state} held-out set "
        f"({section.held_out_scenarios} scenarios)"
    )


def split_terminal(console: Console, report: Report) -> None:
    if report.split is None:
        return
    console.rule(f"[bold]{escape(_split_title(report))}[/]")
    console.print(f"[dim]{escape(report.split.note)}[/]")
    table = Table(*SPLIT_HEAD)
    for cells in split_rows(report):
        table.add_row(*(escape(c) for c in cells))
    print_table(console, table)


def split_html(report: Report) -> str:
    if report.split is None:
        return ""
    e = html.escape
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>" for cells in split_rows(report)
    )
    head = "".join(f"<th>{e(h)}</th>" for h in SPLIT_HEAD)
    return (
        f'<section id="split"><h2>{e(_split_title(report))}</h2><p class="note">{e(report.split.note)}</p>'
        f"<table><tr>{head}</tr>{rows}</table></section>"
    )
