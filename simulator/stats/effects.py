"""Effect sizes for designed experiments: the Mantel–Haenszel odds ratio over strata, with the
Robins–Breslow–Greenland 95% interval (the same estimator as statsmodels' StratifiedTable)."""

from __future__ import annotations

__all__ = ["OddsRatio", "mantel_haenszel"]

import math
from collections.abc import Sequence

from simulator.models import ResultModel
from simulator.stats.basic import z_for_confidence

Table = tuple[
    tuple[float, float], tuple[float, float]
]  # ((a, b), (c, d)): rows exposed/reference, cols event/none


class OddsRatio(ResultModel):
    """A pooled odds ratio (exposed vs reference) with its interval; None when the data cannot give one."""

    estimate: float | None
    low: float | None
    high: float | None
    strata: int  # informative strata: both groups present, and both outcomes seen
    events_exposed: int
    n_exposed: int
    events_reference: int
    n_reference: int
    text: str


def _fmt(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.2f}"


def mantel_haenszel(tables: Sequence[Table], confidence: float = 0.95, shift_zeros: bool = True) -> OddsRatio:
    """The Mantel–Haenszel odds ratio over 2x2 strata. Strata that say nothing about the odds ratio are left
    out: those missing either group, and those where every conversation had the event or none did (they add
    nothing to either sum, and the zero-cell shift would turn them into evidence for 1). With `shift_zeros`,
    0.5 is added to every cell of a remaining stratum that has a zero cell (as statsmodels does)."""
    used = [
        t
        for t in tables
        if sum(t[0]) > 0 and sum(t[1]) > 0 and t[0][0] + t[1][0] > 0 and t[0][1] + t[1][1] > 0
    ]
    counts = [int(sum(t[0][0] for t in used)), int(sum(sum(t[0]) for t in used))]
    counts += [int(sum(t[1][0] for t in used)), int(sum(sum(t[1]) for t in used))]
    base = {
        "strata": len(used),
        "events_exposed": counts[0],
        "n_exposed": counts[1],
        "events_reference": counts[2],
        "n_reference": counts[3],
    }
    if not used:
        why = "no base scenario where the outcome differed" if tables else "no data"
        return OddsRatio(estimate=None, low=None, high=None, text=f"n/a ({why})", **base)
    if counts[0] + counts[2] == 0:
        why = "no events in either group"
        return OddsRatio(estimate=None, low=None, high=None, text=f"n/a ({why})", **base)
    r_sum = s_sum = pr = ps_qr = qs = 0.0
    for (a, b), (c, d) in used:
        if shift_zeros and 0 in (a, b, c, d):
            a, b, c, d = a + 0.5, b + 0.5, c + 0.5, d + 0.5
        n = a + b + c + d
        p, q, r, s = (a + d) / n, (b + c) / n, a * d / n, b * c / n
        r_sum, s_sum = r_sum + r, s_sum + s
        pr, ps_qr, qs = pr + p * r, ps_qr + p * s + q * r, qs + q * s
    if r_sum == 0 or s_sum == 0:
        estimate = 0.0 if r_sum == 0 else math.inf
        return OddsRatio(
            estimate=estimate, low=None, high=None, text=f"{_fmt(estimate)} (no interval)", **base
        )
    estimate = r_sum / s_sum
    se = math.sqrt(pr / (2 * r_sum**2) + ps_qr / (2 * r_sum * s_sum) + qs / (2 * s_sum**2))
    z = z_for_confidence(confidence)
    low, high = math.exp(math.log(estimate) - z * se), math.exp(math.log(estimate) + z * se)
    text = f"{estimate:.2f} ({int(confidence * 100)}% CI {low:.2f}–{high:.2f})"
    return OddsRatio(estimate=estimate, low=low, high=high, text=text, **base)
