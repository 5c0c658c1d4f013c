"""The HTML report's "Numbers that hold up" section: scenario-clustered intervals, missing data, worst-at-k
and the run-to-run spread (docs/stats.md explains each)."""

from __future__ import annotations

__all__ = ["stats_section"]

from simulator.analysis.rates import RateView, pct
from simulator.report.headline import headline_rates
from simulator.report.html_parts import e
from simulator.report.model import Report


def _row(name: str, value: RateView) -> str:
    cl = value.clustered
    clustered = "–" if cl is None else f"{pct(cl.low)}–{pct(cl.high)}"
    if cl is not None and cl.bound is not None:
        clustered += f"; fail ≤{pct(cl.bound)} on {cl.scenarios} scenarios"
    missing = (
        "–" if not value.errored else f"{pct(value.worst)} / {pct(value.best)} ({value.errored} errored)"
    )
    cells = [
        e(name),
        f"{value.k}/{value.n} = {pct(value.rate)}",
        f"{pct(value.low)}–{pct(value.high)}",
        e(clustered),
        "–" if cl is None else str(cl.scenarios),
        "–" if cl is None else f"{cl.n_eff:.1f}",
        "–" if cl is None or cl.icc is None else f"{cl.icc:.2f}",
        e(missing),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _table(head: list[str], rows: list[str]) -> str:
    return "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"


def stats_section(report: Report) -> str:
    """Clustered intervals, missing data, worst-at-k and run-to-run spread, as one section."""
    clustered = _table(
        [
            "rate",
            "counts",
            "95% CI (conversations)",
            "95% CI (scenario-clustered)",
            "scenarios",
            "n_eff",
            "ICC",
            "had the errored all failed / passed",
        ],
        [_row(name, value) for name, value in headline_rates(report)],
    )
    missing = report.missing
    missing_html = f"<p>{missing.errored} of {missing.conversations} conversations errored.</p>"
    missing_html += "".join(f'<p class="warning">{e(w)}</p>' for w in missing.warnings)
    if missing.scenarios:
        missing_html += _table(
            ["scenario", "errored", "conversations"],
            [
                f"<tr><td>{e(s.scenario_id)}</td><td>{s.errored}</td><td>{s.conversations}</td></tr>"
                for s in missing.scenarios
            ],
        )
    worst = _table(
        ["k", "pass^k", "worst-at-k", "scenarios"],
        [
            f"<tr><td>{r.k}</td><td>{pct(r.value)}</td><td>{pct(r.worst_at_k)}</td><td>{r.worst_scenarios}</td></tr>"
            for r in report.pass_hat_k
        ],
    )
    spread = _table(
        ["rate", "repeats", "mean", "SD", "lowest–highest"],
        [
            f"<tr><td>{e(s.metric)}</td><td>{s.repeats}</td><td>{pct(s.mean)}</td><td>{pct(s.sd)}</td>"
            f"<td>{pct(s.low)}–{pct(s.high)}</td></tr>"
            for s in report.spread
        ],
    )
    return (
        '<section id="stats"><h2>Numbers that hold up</h2><p class="note">Repeats of a scenario are not '
        "independent trials, so each pooled rate also has a scenario-clustered interval, its effective sample "
        "size (n_eff, between the number of scenarios and of conversations) and the intraclass correlation. "
        "With no failures, the bound rests on the distinct scenarios. Errored conversations are left out of "
        f"every rate; the last column shows the rate had they all failed or all passed.</p>{clustered}"
        f"<h3>Missing data</h3>{missing_html}"
        f"<h3>worst-at-k: the expected lowest score in k repeats</h3>{worst}"
        f"<h3>Run-to-run spread: each repeat index as one run of the suite</h3>{spread}</section>"
    )
