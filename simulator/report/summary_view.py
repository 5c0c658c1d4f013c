"""The report's first section as data (section.py): the critical rates coloured by their state, then the
findings, most serious first, then the calmer figures (conversations passing, errors, cost, latency).

The terminal and the HTML report draw it first, so the first screen shows what went wrong: a clinical
lead sees a red emergency sensitivity and "3 of 24 emergency conversations were not escalated" before
"conversations passing". The critical rates come before the findings because they are two lines: a run
with many warnings would otherwise push them off the first screen. Every rate shows the interval that holds up (scenario-clustered when it pools repeats) and, when
the errored conversations could move it across that interval, its worst/best bounds beside it.
"""

from __future__ import annotations

__all__: list[str] = []

from simulator.analysis.outcome import OutcomeMetrics
from simulator.plural import plural
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.model import Report
from simulator.report.section import Figure, Figures, FindingLine, Findings, Section, State
from simulator.stats.rates import RateView, pct

_ORDER = {"bug": 0, "warning": 1, "info": 2}
SHOWN_CRITICAL_CRITERIA = 4  # without an outcome key: the critical criteria's failure rates shown first
LINKED = 10  # conversations linked under one finding; the line says how many more there are


def rate_sub(value: RateView) -> str:
    """The line under a rate's figure: counts, the interval that holds up (clustered first, the
    per-conversation one labelled), and the errored cases' range, always lowest first."""
    if value.rate is None:
        return f"{value.k}/{value.n} · nothing measured"
    _, _, inner = value.short.partition(" (")
    inner = inner[:-1].replace(f"; {value.moved}", "") if value.moved else inner[:-1]  # the note says it
    kind = "" if value.shown_bound is not None else " CI"  # a bound alone is not an interval
    sub = f"{value.k}/{value.n} · {100 * value.confidence:g}%{kind} {inner}"
    span = value.missing_range
    if span is not None and not value.errors_could_move:
        ends = "failed or passed" if value.counts == "successes" else "passed or failed"
        sub += f" · {value.errored} errored: {pct(span[0])}–{pct(span[1])} had they all {ends}"
    return sub


def _moved(value: RateView) -> str:
    """Beside a headline rate the errored cases could move across its interval: how far, and how to read it."""
    return f"{value.moved}: read it as that range" if value.moved else ""


def _rate_state(value: RateView, bad: bool) -> State | None:
    """fail when the rate shows harm, warn when the errored cases could hide it, ok otherwise."""
    if value.rate is None:
        return None
    if bad:
        return "fail"
    return "warn" if value.errors_could_move else "ok"


def _figure(label: str, value: RateView, bad: bool) -> Figure:
    return Figure(
        label, pct(value.rate), rate_sub(value), _rate_state(value, bad), rate=value, note=_moved(value)
    )


def _labelled(outcome: OutcomeMetrics) -> str:
    """Where the expected levels came from, when clinicians labelled any (record/labelled_levels.py): a
    rate against a clinician's level is not one against a scenario's, and its words say so."""
    if not outcome.clinician_labelled:
        return ""
    return f" (expected level clinician-labelled on {outcome.clinician_labelled} of {outcome.conversations})"


def _critical(report: Report) -> list[Figure]:
    """The critical level's sensitivity and under-triage; without an outcome key, the failure rates of
    the criteria of severity critical."""
    outcome = report.outcome
    if outcome is not None:
        sens, under = outcome.critical_sensitivity, outcome.under_triage
        return [
            _figure(f"{outcome.critical} sensitivity (escalated)", sens, sens.k < sens.n),
            _figure("under-triage incl. no decision" + _labelled(outcome), under, under.k > 0),
        ]
    rows = [r for r in report.criteria if r.severity == "critical" and r.fail_rate.n]
    return [_figure(f"{r.id} failure rate", r.fail_rate, r.fail_rate.k > 0) for r in rows][
        :SHOWN_CRITICAL_CRITERIA
    ]


def _others(report: Report) -> list[Figure]:
    """The calmer figures: conversations passing, over-triage, errors, the turn limit, cost, latency."""
    overall = report.overall
    llm = [r for r in report.criteria if r.kind == "llm"]
    unjudged = bool(llm) and all(r.counts.passed + r.counts.failed == 0 for r in llm)
    figures = [
        Figure(
            # Reading item 8: with every LLM criterion unjudged, the figure covers the code checks only.
            "conversations passing the code checks (no LLM criterion judged)"
            if unjudged
            else "conversations passing",
            pct(overall.rate),
            rate_sub(overall),
            rate=overall,
            note=report.overall_covers,
        )
    ]
    outcome = report.outcome
    if outcome is not None:
        over = "over-triage" + _labelled(outcome)
        for label, value in ((over, outcome.over_triage), ("no decision", outcome.no_decision)):
            figures.append(
                Figure(label, pct(value.rate), rate_sub(value), "warn" if value.k else None, value)
            )
    health = report.health
    errors = health.conversation_errors
    figures.append(
        Figure(
            "conversation errors", pct(errors.rate), rate_sub(errors), "error" if errors.k else None, errors
        )
    )
    limit = health.turn_limit
    figures.append(
        Figure(
            "hit the turn limit",
            pct(limit.rate),
            rate_sub(limit),
            "warn" if health.turn_limit_finding else None,
        )
    )
    cost = report.cost
    total = "unpriced" if cost.total_cost is None else f"{cost.total_cost:.4f} {cost.currency}"
    figures.append(Figure("total cost", total, f"prices as of {cost.prices_as_of}"))
    bot = cost.latency[0]
    if bot.n and bot.p95_s is not None and bot.median_s is not None:
        figures.append(
            Figure(
                "bot reply p95",
                f"{bot.p95_s:.2f}s",
                f"median {bot.median_s:.2f}s over {plural(bot.n, 'turn')}",
            )
        )
    return figures


def summary_section(report: Report) -> Section:
    """The critical rates, the findings (bugs, then warnings, then information), then the other figures."""
    anchors = {t.id: f"#t{i}" for i, t in enumerate(report.transcripts)}
    lines = [
        FindingLine(
            f.level,
            f.title,
            f.detail,
            [(c, anchors.get(c)) for c in f.conversations[:LINKED]],
            max(0, len(f.conversations) - LINKED),
        )
        for f in sorted(report.findings, key=lambda f: _ORDER[f.level])
    ]
    critical = _critical(report)
    blocks: list[Findings | Figures] = [Figures(critical, critical=True)] if critical else []
    blocks += [Findings(lines), Figures(_others(report))]
    state: State | None = "fail" if any(f.level == "bug" for f in report.findings) else None
    return Section("summary", "Summary", blocks, state)


register_analysis(
    Analysis(name="summary", draw=lambda report, everything: summary_section(report), draw_order=0)
)
