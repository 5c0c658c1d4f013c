"""Two golden runs side by side: each scorer next to the verdict, and the intents each run gets wrong.

The item-level paired test (McNemar's exact test on pass^k item verdicts) is the ordinary paired metric
of `analysis/compare.py`; this module only lays out the golden-specific table.
"""

from __future__ import annotations

__all__ = ["GoldenComparison", "GoldenIntentDelta", "GoldenMetricRow", "golden_comparison"]


from simulator.analysis.golden import SIMILARITY_METRICS, GoldenSection
from simulator.models import StrictModel as _Model

_NAMES = {"token_f1": "mean token F1", "rouge_l": "mean ROUGE-L", "difflib_ratio": "mean difflib ratio"}


class GoldenMetricRow(_Model):
    """One scorer in A and in B, as text (`36/48 75.0% (...)`, `0.775`, intent names)."""

    name: str
    a: str
    b: str


class GoldenIntentDelta(_Model):
    """One intent's item verdicts in A and in B; `*_zero` marks a row of zeros (a bug report)."""

    intent: str
    a: str
    b: str
    a_zero: bool
    b_zero: bool


class GoldenComparison(_Model):
    """The golden table of `simulator compare`, present when both runs hold golden items."""

    metrics: list[GoldenMetricRow]
    intents: list[GoldenIntentDelta]


def _mean(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def golden_comparison(a: GoldenSection, b: GoldenSection) -> GoldenComparison:
    """The per-metric and per-intent tables of two golden sections."""
    gate = f"gate {a.gate.metric} ≥ {a.gate.threshold:g}"
    rows = [
        GoldenMetricRow(name="verdict (pass)", a=a.verdict.short, b=b.verdict.short),
        GoldenMetricRow(name="exact match", a=a.exact_match.short, b=b.exact_match.short),
        GoldenMetricRow(name="assertions", a=a.assertions.short, b=b.assertions.short),
        GoldenMetricRow(name=gate, a=a.gate_pass.short, b=b.gate_pass.short),
    ]
    rows += [
        GoldenMetricRow(name=_NAMES[m], a=_mean(a.means.get(m)), b=_mean(b.means.get(m)))
        for m in SIMILARITY_METRICS
    ]
    rows += [
        GoldenMetricRow(
            name="intents at zero",
            a=", ".join(a.intents_at_zero) or "none",
            b=", ".join(b.intents_at_zero) or "none",
        ),
        GoldenMetricRow(name="errors (items)", a=str(a.errors), b=str(b.errors)),
    ]
    rows_a = {row.intent: row for row in a.intents}
    rows_b = {row.intent: row for row in b.intents}
    intents = []
    for intent in dict.fromkeys([*rows_a, *rows_b]):
        ra, rb = rows_a.get(intent), rows_b.get(intent)
        intents.append(
            GoldenIntentDelta(
                intent=intent,
                a=f"{ra.rate.k}/{ra.rate.n}" if ra else "–",
                b=f"{rb.rate.k}/{rb.rate.n}" if rb else "–",
                a_zero=bool(ra and ra.all_failed),
                b_zero=bool(rb and rb.all_failed),
            )
        )
    return GoldenComparison(metrics=rows, intents=intents)
