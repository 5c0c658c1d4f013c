"""A rate as report data: counts, Wilson interval, zero-failure bound and runs needed for a target bound."""

from __future__ import annotations

__all__ = ["RateView", "pct", "rate_view"]

from pydantic import BaseModel, ConfigDict

from simulator.analysis.stats import Counts, pct, rate, runs_needed_for_bound


class RateView(BaseModel):
    """k of n with its Wilson interval; `bound` is the one-sided failure bound when no failure was seen.

    `runs_needed` is how many failure-free runs in total would bring that bound under `target`; it is
    set only when no failure was seen and the bound is still above the target.
    """

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    k: int
    n: int
    rate: float | None
    low: float
    high: float
    counts: Counts = "failures"
    confidence: float = 0.95
    bound: float | None = None
    target: float | None = None
    runs_needed: int | None = None
    text: str = ""

    @property
    def short(self) -> str:
        """The compact form used in table cells: `2/40 5.0% (1.4–16.5%)`, plus `≤7.2%` for no failures."""
        if self.rate is None:
            return f"{self.k}/{self.n} n/a"
        inner = f"{pct(self.low)}–{pct(self.high)}"
        if self.bound is not None:
            inner += f"; fail ≤{pct(self.bound)}"
        return f"{self.k}/{self.n} {pct(self.rate)} ({inner})"

    @property
    def needs_more_runs(self) -> str:
        """`needs 299 failure-free runs for ≤1.0% (259 more)` when a target was set and is not yet met."""
        if self.runs_needed is None or self.target is None:
            return ""
        more = max(0, self.runs_needed - self.n)
        return f"needs {self.runs_needed} failure-free runs for ≤{pct(self.target)} ({more} more)"


def rate_view(
    k: int,
    n: int,
    *,
    counts: Counts = "failures",
    target: float | None = None,
    confidence: float = 0.95,
    share: bool = False,
) -> RateView:
    """Build a RateView from counts with `simulator.analysis.stats.rate`, adding the runs needed for `target`.

    `share=True` is for a distribution (stop reasons), where "no failure seen" means nothing: no bound.
    """
    r = rate(k, n, counts=counts, confidence=confidence)
    if share:
        ci = f"{100 * confidence:g}% CI {pct(r.low)}–{pct(r.high)}"
        text = f"{k}/{n} = n/a (no cases)" if r.rate is None else f"{k}/{n} = {pct(r.rate)} ({ci})"
        return RateView(
            k=k, n=n, rate=r.rate, low=r.low, high=r.high, counts=counts, confidence=confidence, text=text
        )
    needed = None
    if target is not None and r.zero_failure_bound is not None and r.zero_failure_bound > target:
        needed = runs_needed_for_bound(target, confidence)
    return RateView(
        k=r.k,
        n=r.n,
        rate=r.rate,
        low=r.low,
        high=r.high,
        counts=counts,
        confidence=confidence,
        bound=r.zero_failure_bound,
        target=target,
        runs_needed=needed,
        text=str(r),
    )
