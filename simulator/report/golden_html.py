"""The golden section of the HTML report: scorers beside the verdict, verdict by intent (rows of zeros
marked), gate disagreements and the threshold sweep. Every reply is escaped."""

from __future__ import annotations

__all__ = ["golden_html"]

from simulator.analysis.golden import SIMILARITY_METRICS, GoldenSection
from simulator.analysis.rates import pct
from simulator.report.golden_terminal import METRIC_NAMES, number, short
from simulator.report.html_parts import badge, e, rate_cell


def _row(*cells: str) -> str:
    return "<tr>" + "".join(cells) + "</tr>"


def _td(value: object, cls: str = "") -> str:
    return f'<td class="{cls}">{e(value)}</td>'


def _scorers(golden: GoldenSection) -> str:
    gate = f"gate {golden.gate.metric} ≥ {golden.gate.threshold:g}"
    rows = [
        _row(_td("verdict (pass)"), rate_cell(golden.verdict)),
        _row(_td("exact match"), rate_cell(golden.exact_match)),
        _row(_td("assertions"), rate_cell(golden.assertions)),
        _row(_td(gate), rate_cell(golden.gate_pass)),
    ]
    if golden.samples > 1:
        rows.insert(1, _row(_td("samples passing"), rate_cell(golden.sample_pass)))
    if golden.errors:
        rows.insert(1, _row(_td("errors (not pass, not fail)"), _td(golden.errors, "num")))
    rows += [_row(_td(METRIC_NAMES[m]), _td(number(golden.means.get(m)), "num")) for m in SIMILARITY_METRICS]
    return "<table><tr><th>scorer</th><th>result (items)</th></tr>" + "".join(rows) + "</table>"


def _intents(golden: GoldenSection) -> str:
    rows = [
        _row(
            f"<td>{e(r.intent)}{' ' + badge('fail', 'ALL FAIL') if r.all_failed else ''}</td>",
            _td(r.passed, "num"),
            _td(r.failed, "num"),
            _td(r.errors, "num"),
            rate_cell(r.rate),
        )
        for r in golden.intents
    ]
    head = '<tr><th>intent</th><th class="num">pass</th><th class="num">fail</th><th class="num">error</th>'
    return (
        "<h3>Verdict by intent (a row of zeros is a bug report)</h3><table>"
        + head
        + "<th>pass rate (95% CI)</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _disagreements(golden: GoldenSection) -> str:
    gate = f"{golden.gate.metric} ≥ {golden.gate.threshold:g}"
    rows = [
        _row(
            _td(d.item_id),
            _td(d.intent),
            _td(f"{d.score:.2f}", "num"),
            _td("pass" if d.gate_passed else "fail"),
            _td(d.verdict),
            _td(short(d.reply, 120)),
        )
        for d in golden.disagreements
    ]
    head = f"<tr><th>item</th><th>intent</th><th>{e(golden.gate.metric)}</th><th>gate</th><th>verdict</th><th>reply</th></tr>"
    table = f"<table>{head}{''.join(rows)}</table>" if rows else ""
    return f"<h3>Where the gate ({e(gate)}) and the verdict disagree: {len(rows)}</h3>{table}"


def _sweep(golden: GoldenSection) -> str:
    head = (
        "<tr><th>threshold</th>"
        + "".join(f'<th class="num">{e(m)}</th>' for m in SIMILARITY_METRICS)
        + "</tr>"
    )
    rows = [
        _row(
            _td(f"{r.threshold:.1f}", "num"),
            *(
                _td(f"{r.shares[m].k}/{r.shares[m].n} {pct(r.shares[m].rate)}", "num")
                for m in SIMILARITY_METRICS
            ),
        )
        for r in golden.sweep
    ]
    return f"<h3>Threshold sweep: items at or above each threshold</h3><table>{head}{''.join(rows)}</table>"


def golden_html(golden: GoldenSection | None) -> str:
    """The section, or nothing when the run holds no golden item."""
    if golden is None:
        return ""
    note = (
        f"{golden.items} items × {golden.samples} sample(s): an item passes only if every sample passes; "
        f"errored items ({golden.errors}) are left out of every rate. The verdict (exact match or the "
        "assertions) decides; similarity scores gate nothing."
    )
    return (
        f'<section id="golden"><h2>Golden items</h2><p class="note">{e(note)}</p>{_scorers(golden)}'
        f"{_intents(golden)}{_disagreements(golden)}{_sweep(golden)}</section>"
    )
