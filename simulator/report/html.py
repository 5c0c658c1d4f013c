"""The self-contained HTML report: summary, tables with interval plots, a filterable transcript viewer.

One file, no network: CSS and JS are inlined, a Content-Security-Policy allows only the report's own script
(by hash) and forbids every fetch, and every string from a transcript or verdict is HTML-escaped.
"""

from __future__ import annotations

__all__ = ["render_html", "write_html"]

import base64
import hashlib
from importlib import resources
from pathlib import Path

from simulator.analysis.rates import RateView, pct
from simulator.analysis.rundata import short_hash
from simulator.analysis.tables import CriterionRow, VerdictCounts
from simulator.report.golden_html import golden_html
from simulator.report.html_judges import judges_section
from simulator.report.html_parts import badge, e, rate_cell, transcript_html
from simulator.report.html_stats import stats_section
from simulator.report.model import Report
from simulator.report.redteam_views import redteam_html
from simulator.report.simulator_views import factors_html, simulated_user_html


def _asset(name: str) -> str:
    return resources.files("simulator.report").joinpath("assets", name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; connect-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _counts_cells(counts: VerdictCounts) -> str:
    values = (counts.passed, counts.failed, counts.not_applicable, counts.error, counts.not_judged)
    return "".join(f'<td class="num">{v}</td>' for v in values)


def _head(*names: str, num: tuple[str, ...] = ()) -> str:
    return "<tr>" + "".join(f'<th class="{"num" if n in num else ""}">{e(n)}</th>' for n in names) + "</tr>"


_COUNT_NAMES = ("pass", "fail", "n.a.", "error", "not judged")


def _card(label: str, value: RateView | str, sub: str = "", note: str = "") -> str:
    if isinstance(value, RateView):
        big = pct(value.rate)
        sub = f"{value.k}/{value.n} · 95% CI {pct(value.low)}–{pct(value.high)}" + (
            f" · fail ≤{pct(value.bound)}" if value.bound is not None else ""
        )
        if value.clustered is not None and value.rate is not None:
            sub += f" · clustered {pct(value.clustered.low)}–{pct(value.clustered.high)} over {value.clustered.scenarios} scenarios"
        if value.errored:
            sub += f" · {value.errored} errored: {pct(value.worst)}–{pct(value.best)} had they failed/passed"
    else:
        big = value
    covers = f'<div class="sub">{e(note)}</div>' if note else ""
    return (
        f'<div class="card"><div class="label">{e(label)}</div><div class="value">{e(big)}</div>'
        f'<div class="sub">{e(sub)}</div>{covers}</div>'
    )


def _summary(report: Report) -> str:
    cards = [_card("conversations passing", report.overall, note=report.overall_covers)]
    outcome = report.outcome
    if outcome is not None:
        cards += [
            _card(f"{outcome.critical} escalated (sensitivity)", outcome.critical_sensitivity),
            _card("under-triage incl. no decision", outcome.under_triage),
            _card("over-triage", outcome.over_triage),
        ]
    health = report.health
    cards.append(_card("conversation errors", health.conversation_errors))
    cards.append(_card("hit the turn limit", health.turn_limit))
    cost = report.cost
    total = "unpriced" if cost.total_cost is None else f"{cost.total_cost:.4f} {cost.currency}"
    cards.append(_card("total cost", total, f"prices as of {cost.prices_as_of}"))
    bot = cost.latency[0]
    if bot.n:
        cards.append(
            _card("bot reply p95", f"{bot.p95_s:.2f}s", f"median {bot.median_s:.2f}s over {bot.n} turns")
        )
    findings = "".join(
        f'<li class="{f.level}"><span class="lvl">{f.level.upper()}</span>{e(f.title)}'
        f"{f' <span class=detail>— {e(f.detail)}</span>' if f.detail else ''}</li>"
        for f in report.findings
    )
    return (
        f'<section id="summary"><h2>Summary</h2><div class="cards">{"".join(cards)}</div>'
        f'<ul class="findings">{findings or "<li class=info>No findings.</li>"}</ul></section>'
    )


def _outcome(report: Report) -> str:
    outcome = report.outcome
    if outcome is None:
        return ""
    rank = {level: i for i, level in enumerate(outcome.levels)}
    rows = []
    for row in outcome.matrix:
        cells = []
        for column, count in zip(outcome.columns, row.counts, strict=True):
            cls = "num"
            if count and column in rank:
                cls += (
                    " diag"
                    if column == row.expected
                    else (" under" if rank[column] < rank[row.expected] else " over")
                )
            elif count:
                cls += " odd"
            cells.append(f'<td class="{cls}">{count}</td>')
        rows.append(f"<tr><th>{e(row.expected)}</th>{''.join(cells)}<td class='num'>{row.total}</td></tr>")
    matrix = (
        "<table><tr><th>expected ↓ / actual →</th>"
        + "".join(f'<th class="num">{e(c)}</th>' for c in outcome.columns)
        + '<th class="num">total</th></tr>'
        + "".join(rows)
        + "</table>"
    )
    named = [
        (f"{outcome.critical} sensitivity (escalated)", outcome.critical_sensitivity),
        ("under-triage (incl. no decision on a case that needed one)", outcome.under_triage),
        ("under-triage, decided cases only", outcome.under_triage_decided),
        ("over-triage", outcome.over_triage),
        ("no decision", outcome.no_decision),
        ("exact level", outcome.exact),
        *[(f"sensitivity: {s.level}", s.rate) for s in outcome.sensitivity],
    ]
    rates = (
        "<table>"
        + _head("metric", "counts, rate, 95% CI")
        + "".join(f"<tr><td>{e(name)}</td>{rate_cell(value)}</tr>" for name, value in named)
        + "</table>"
    )
    anchors = {t.id: i for i, t in enumerate(report.transcripts)}
    cases = "".join(
        f'<tr><td><a href="#t{anchors.get(c.conversation_id, 0)}">{e(c.conversation_id)}</a></td>'
        f"<td>{e(c.kind.replace('_', ' '))}</td><td>{e(c.expected)}</td><td>{e(c.actual)}</td></tr>"
        for c in outcome.cases
    )
    return (
        f'<section id="outcome"><h2>Outcome: {e(outcome.key)}</h2>'
        f'<p class="note">Levels, lowest first: {e(" < ".join(outcome.levels))}. Rows are what the scenario '
        f"expects, columns what the bot recorded. Errored conversations ({outcome.errored}) are shown in the "
        f"matrix but left out of every rate; conversations that ended without a decision are their own column "
        f"and their own rate.</p>{matrix}{rates}"
        + (
            f"<h3>Cases to read</h3><table>{_head('conversation', 'what', 'expected', 'actual')}{cases}</table>"
            if cases
            else ""
        )
        + "</section>"
    )


def _criteria(section_id: str, title: str, note: str, rows: list[CriterionRow]) -> str:
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{e(r.id)}</td><td>{e(r.kind)}</td><td>{e(r.severity or '–')}</td><td>{e(r.category or '–')}</td>"
        f"{_counts_cells(r.counts)}{rate_cell(r.fail_rate)}<td class='num'>{r.unverified_evidence}</td></tr>"
        for r in rows
    )
    head = _head(
        "criterion",
        "kind",
        "severity",
        "category",
        *_COUNT_NAMES,
        "failure rate (95% CI)",
        "unverified",
        num=(*_COUNT_NAMES, "unverified"),
    )
    return f'<section id="{section_id}"><h2>{e(title)}</h2><p class="note">{e(note)}</p><table>{head}{body}</table></section>'


def _scenarios(report: Report) -> str:
    rows = []
    for r in report.scenarios:
        flags = (badge("bug", "BUG") if r.bug else "") + (" " + badge("flaky", "FLAKY") if r.flaky else "")
        if r.flaky_source is not None:
            flags += "".join(" " + badge("flaky", f"FLAKY-{s.upper()}") for s in r.flaky_source.sources)
        s = r.statuses
        rows.append(
            f"<tr><td>{e(r.id)}</td><td>{e(', '.join(r.tags))}</td><td class='num'>{r.conversations}</td>"
            f"<td class='num'>{s['pass']}</td><td class='num'>{s['fail']}</td><td class='num'>{s['error']}</td>"
            f"<td class='num'>{s['not_judged']}</td>{rate_cell(r.pass_rate)}<td>{flags}</td>"
            f"<td>{e('; '.join(r.failing_criteria))}</td></tr>"
        )
    scen = (
        "<table>"
        + _head(
            "scenario",
            "tags",
            "runs",
            "pass",
            "fail",
            "error",
            "not judged",
            "pass rate (95% CI)",
            "flags",
            "failing",
            num=("runs", "pass", "fail", "error", "not judged"),
        )
        + "".join(rows)
        + "</table>"
    )
    tags = (
        "<table>"
        + _head("tag", "scenarios", "runs", *_COUNT_NAMES, "pass rate (95% CI)", num=_COUNT_NAMES)
        + "".join(
            f"<tr><td>{'<strong>' + e(t.tag) + '</strong>' if t.high_stakes else e(t.tag)}</td>"
            f"<td class='num'>{t.scenarios}</td><td class='num'>{t.conversations}</td>{_counts_cells(t.counts)}"
            f"{rate_cell(t.pass_rate)}</tr>"
            for t in report.tags
        )
        + "</table>"
    )
    hat = (
        "<table>"
        + _head("k", "pass^k", "95% CI (bootstrap over scenarios)", "scenarios")
        + "".join(
            f"<tr><td>{r.k}</td><td class='num'>{pct(r.value)}</td><td>{pct(r.low)}–{pct(r.high)}</td>"
            f"<td class='num'>{r.scenarios}</td></tr>"
            for r in report.pass_hat_k
        )
        + "</table>"
    )
    bug = (
        f"BUG: a scenario tagged '{e(report.high_stakes_tag)}' that failed in any run; it is listed, not "
        "averaged away."
        if report.high_stakes_tag
        else "No high-stakes tag is set (suite: high_stakes_tag), so no failure is listed as a bug."
    )
    return (
        '<section id="scenarios"><h2>Scenarios</h2><p class="note">A conversation passes when none of its '
        f"verdicts failed. FLAKY: mixed outcomes across repeats. {bug}</p>"
        f"{scen}<h3>Tag groups</h3>{tags}<h3>pass^k: the chance k fresh runs all pass</h3>{hat}</section>"
    )


def _health(report: Report) -> str:
    h = report.health
    stops = (
        "<table>"
        + _head("stop reason", "conversations (95% CI)")
        + "".join(f"<tr><td>{e(r.reason)}</td>{rate_cell(r.rate)}</tr>" for r in h.stop_reasons)
        + "</table>"
    )
    facts = (
        f"<table><tr><td>character breaks re-run</td><td>{h.character_breaks} in {h.conversations_with_breaks} "
        f"conversations ({h.gave_up_on_breaks} gave up)</td></tr>"
        f"<tr><td>conversations re-run after an error</td><td>{len(h.retried)}</td></tr>"
        f"<tr><td>missing conversations</td><td>{h.missing} of {h.planned} (status {e(h.status)})</td></tr>"
        f"<tr><td>conversation errors</td>{rate_cell(h.conversation_errors)}</tr>"
        f"<tr><td>judge errors</td>{rate_cell(h.judge_errors)}</tr>"
        f"<tr><td>unverified evidence</td>{rate_cell(h.unverified)}</tr>"
        f"<tr><td>not judged</td><td>{h.not_judged}</td></tr></table>"
    )
    errors = "".join(
        f"<tr><td>{e(r.conversation_id)}</td><td>{e(r.criterion_id or '–')}</td><td>{e(r.source)}</td>"
        f"<td>{e(r.kind)}</td><td>{e(r.message)}</td></tr>"
        for r in h.errors + h.judge_error_rows
    )
    unverified = "".join(
        f"<tr><td>{e(r.conversation_id)}</td><td>{e(r.criterion_id)}</td><td>{badge(r.result)}</td>"
        f"<td>{e(' | '.join(r.quotes) or '(no quote)')}</td></tr>"
        for r in h.unverified_rows
    )
    return (
        f'<section id="health"><h2>Run health</h2>{stops}{facts}'
        + (
            f"<h3>Errors (never counted as pass or fail)</h3><table>{_head('conversation', 'criterion', 'source', 'kind', 'message')}{errors}</table>"
            if errors
            else ""
        )
        + (
            f"<h3>Unverified evidence</h3><table>{_head('conversation', 'criterion', 'result', 'quotes not found')}{unverified}</table>"
            if unverified
            else ""
        )
        + "</section>"
    )


def _cost(report: Report) -> str:
    c = report.cost
    money = lambda v: "unpriced" if v is None else f"{v:.4f} {c.currency}"  # noqa: E731
    roles = (
        "<table>"
        + _head(
            "role",
            "models",
            "calls",
            "input",
            "cached input",
            "output",
            "cost",
            "cache hits",
            num=("calls", "input", "cached input", "output", "cost", "cache hits"),
        )
        + "".join(
            f"<tr><td>{e(r.role)}</td><td>{e(', '.join(r.models) or '–')}</td><td class='num'>{r.calls}</td>"
            f"<td class='num'>{r.input_tokens:,}</td><td class='num'>{r.cached_input_tokens:,}</td>"
            f"<td class='num'>{r.output_tokens:,}</td><td class='num'>{e(money(r.cost))}</td>"
            f"<td class='num'>{r.cache_hits}</td></tr>"
            for r in c.roles
        )
        + "</table>"
    )
    sec = lambda v: "–" if v is None else f"{v:.2f}s"  # noqa: E731
    latency = (
        "<table>"
        + _head("what", "n", "median", "p95", "max", num=("n", "median", "p95", "max"))
        + "".join(
            f"<tr><td>{e(r.name)}</td><td class='num'>{r.n}</td><td class='num'>{sec(r.median_s)}</td>"
            f"<td class='num'>{sec(r.p95_s)}</td><td class='num'>{sec(r.max_s)}</td></tr>"
            for r in c.latency
        )
        + "</table>"
    )
    failures = (
        "<table>"
        + _head("role", "failure", "rate (95% CI)", "kinds")
        + "".join(
            f"<tr><td>{e(r.role)}</td><td>{e(r.failure)}</td>{rate_cell(r.rate, plot=False)}<td>{e(', '.join(r.kinds))}</td></tr>"
            for r in c.failures
        )
        + "</table>"
    )
    return (
        f'<section id="cost"><h2>Cost and latency</h2><p class="note">Prices: {e(c.prices_source)}, as of '
        f"{e(c.prices_as_of)}, per million tokens. Total {e(money(c.total_cost))}; per conversation median "
        f"{e(money(c.cost_per_conversation_median))}, p95 {e(money(c.cost_per_conversation_p95))}.</p>"
        f"{roles}<h3>Latency</h3>{latency}<h3>Failure rates</h3>{failures}</section>"
    )


def _options(values: list[str]) -> str:
    return "".join(f'<option value="{e(v)}">{e(v)}</option>' for v in values)


def _transcripts(report: Report) -> str:
    criteria = sorted({v.criterion_id for t in report.transcripts for v in t.verdicts})
    tags = sorted({tag for t in report.transcripts for tag in t.tags})
    results = ["pass", "fail", "not_applicable", "error", "not_judged"]
    filters = (
        '<div class="filters">'
        f'<label>criterion <select id="f-criterion"><option value="">any</option>{_options(criteria)}</select></label>'
        f'<label>result <select id="f-result"><option value="">any</option>{_options(results)}</select></label>'
        f'<label>tag <select id="f-tag"><option value="">any</option>{_options(tags)}</select></label>'
        f'<label>conversation <select id="f-status"><option value="">any</option>'
        f"{_options(['pass', 'fail', 'error', 'not_judged'])}</select></label>"
        '<span id="shown"></span></div>'
    )
    body = "".join(transcript_html(i, t) for i, t in enumerate(report.transcripts))
    return (
        '<section id="transcripts"><h2>Transcripts</h2><p class="note">Highlighted passages are the evidence '
        "judges quoted (red: quoted by a failing verdict); click a verdict to outline its passages. Quotes the "
        f"engine could not find in the transcript are marked NOT FOUND.</p>{_left_out(report)}{filters}{body}"
        "</section>"
    )


def _left_out(report: Report) -> str:
    """What the page does not carry in full, and how to read it (the run folder keeps everything)."""
    gone = report.transcripts_left_out
    if gone is None:
        return ""
    return (
        f'<p class="note"><strong>{gone.passing_left_out} passing conversations are not shown</strong>: this '
        f"page carries every failing, errored and undecided conversation and {gone.passing_shown} passing ones "
        f"(the first {gone.per_scenario} of each scenario). The run folder keeps them all: "
        f"<code>{e(gone.how_to_see)}</code>, or <code>simulator report --html FILE "
        "--passing-transcripts all</code>.</p>"
    )


# The navigation bar's names of the sections, in page order.
_NAV_NAMES = {
    "summary": "Summary",
    "golden": "Golden items",
    "outcome": "Outcome",
    "omissions": "Omissions",
    "criteria": "Criteria",
    "scenarios": "Scenarios",
    "stats": "Numbers that hold up",
    "simulated-user": "Simulated user",
    "factors": "Factors",
    "redteam": "Red team",
    "health": "Run health",
    "cost": "Cost &amp; latency",
    "judges": "Judges",
    "transcripts": "Transcripts",
}


def render_html(report: Report) -> str:
    """The whole report as one HTML document."""
    script = _asset("report.js")
    run = report.run
    title = f"simulator report · {run.suite} · {run.run_id}"
    meta = (
        f"bot {run.bot} · user {run.user_model} · judge {run.judge_model or '–'} · {run.scenarios} scenarios × "
        f"{run.runs} runs = {run.conversations} conversations · status {run.status} · judge set "
        f"{short_hash(run.judge_set)} · started {run.created_at:%Y-%m-%d %H:%M} UTC · generated "
        f"{report.generated_at:%Y-%m-%d %H:%M} UTC"
    )
    sections = [
        _summary(report),
        golden_html(report.golden),
        _outcome(report),
        _criteria(
            "omissions",
            "Errors of omission",
            "Criteria of category 'omission': questions the bot needed "
            "to ask. Failure rates count pass and fail verdicts only.",
            report.omissions,
        ),
        _criteria(
            "criteria",
            "Criteria",
            "Every criterion: code checks, LLM judges and metrics. Errors and "
            "not-applicable verdicts are counted apart, never as pass or fail.",
            report.criteria,
        ),
        _scenarios(report),
        stats_section(report),
        simulated_user_html(report),
        factors_html(report),
        redteam_html(report),
        _health(report),
        _cost(report),
        judges_section(report),
        _transcripts(report),
    ]
    nav = "".join(
        f'<a href="#{i}">{n}</a>' for i, n in _NAV_NAMES.items() if f'<section id="{i}">' in "".join(sections)
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(_csp(script))}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_asset('report.css')}{_asset('parts.css')}</style></head><body>"
        f'<header><h1>{e(title)}</h1><div class="meta">{e(meta)}</div></header><nav>{nav}</nav>'
        f"<main>{''.join(sections)}</main><script>{script}</script></body></html>"
    )


def write_html(report: Report, path: Path) -> None:
    """Write the HTML report to `path`."""
    path.write_text(render_html(report), encoding="utf-8")
