"""A rate as report data: counts, Wilson interval, zero-failure bound, runs needed for a target bound, the
scenario-clustered interval (repeats are not independent) and the bounds if every errored case had failed
or passed (missing data is not missing at random)."""

from __future__ import annotations

__all__ = ["CITE", "RateView", "pct", "rate_view"]

from collections.abc import Sequence
from typing import Any

from pydantic import PrivateAttr

from simulator.models import ResultModel
from simulator.plural import plural
from simulator.stats.basic import Counts, bound_words, pct, rate, runs_needed_for_bound
from simulator.stats.clustered import clustered_interval, clustered_zero_failure_bound

# Which interval to cite, in a clinician's words (every report and document prints it once).
CITE = (
    "Cite the first interval of each figure: it counts vignettes (clinical cases), because repeats and "
    "variants of one case are not independent evidence. An interval marked 'per conversation' is narrower "
    "and only for reference; when nothing was seen against a rate, cite its one-sided bound on the vignettes."
)


class ClusteredView(ResultModel):
    """The same rate with clusters as the unit (stats/clustered.py): interval, effective sample size.

    `scenarios` counts the clusters: vignettes (a base scenario with its repeats and variants) in a run,
    users in live traffic; `unit` names them in every sentence, so a clinician never reads 8 vignettes as 8
    scenario files or 8 conversations. `bound` is the one-sided failure bound when no failure was seen; it
    rests on the distinct clusters, not on the conversations.
    """

    low: float
    high: float
    scenarios: int
    n_eff: float
    design_effect: float
    icc: float | None
    bound: float | None = None
    unit: str = "vignettes"

    @property
    def over(self) -> str:
        """`over 8 vignettes`: the clusters the interval rests on, in words."""
        return f"over {plural(self.scenarios, self.unit.removesuffix('s'))}"

    @property
    def clustered_by(self) -> str:
        """`vignette-clustered`, `user-clustered`."""
        return f"{self.unit.removesuffix('s')}-clustered"

    @property
    def short(self) -> str:
        """`12.0–45.1% over 8 vignettes, n_eff 14.2`, or `≤31.2% over 8 vignettes (one-sided)` when nothing
        was seen against the rate (the bound replaces the interval)."""
        if self.bound is not None:
            return f"≤{pct(self.bound)} failure rate {self.over} (one-sided), n_eff {self.n_eff:.1f}"
        return f"{pct(self.low)}–{pct(self.high)} {self.over}, n_eff {self.n_eff:.1f}"


class RateView(ResultModel):
    """k of n with its Wilson interval; `bound` is the one-sided failure bound when no failure was seen.

    `runs_needed` is how many failure-free runs in total would bring that bound under `target`; it is
    set only when no failure was seen and the bound is still above the target.
    """

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
    clustered: ClusteredView | None = None
    errored: int = 0
    worst: float | None = None
    best: float | None = None
    # The (k, n) per scenario behind `clustered`, kept in memory (not in the report) so the gate's advice can
    # project from the very counts its bound came from (stats/projection.py).
    _per_scenario: list[tuple[int, int]] = PrivateAttr(default_factory=list)

    def __eq__(self, other: object) -> bool:
        """Equal when the report fields are: the in-memory per-scenario counts do not travel with a report."""
        return isinstance(other, RateView) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    @property
    def per_scenario(self) -> list[tuple[int, int]]:
        """The per-scenario (k, n) counts of the clustered interval; empty when not pooled or reloaded."""
        return self._per_scenario

    @property
    def missing_short(self) -> str:
        """`if the 3 errored had all failed 25.0%, all passed 17.5%`; "" when nothing errored."""
        if not self.errored or self.worst is None or self.best is None:
            return ""
        return f"if the {self.errored} errored had all failed {pct(self.worst)}, all passed {pct(self.best)}"

    def _plain_short(self) -> str:
        """The per-conversation compact form: `2/40 5.0% (1.4–16.5%)`, `≤7.2%` for no failures."""
        if self.rate is None:
            return f"{self.k}/{self.n} n/a"
        if self.bound is not None:  # nothing against the rate: its one-sided bound is the interval
            return f"{self.k}/{self.n} {pct(self.rate)} ({self._bound_short(self.bound)})"
        return f"{self.k}/{self.n} {pct(self.rate)} ({pct(self.low)}–{pct(self.high)})"

    def _bound_short(self, bound: float) -> str:
        """`≤4.4%` for a rate that counts events, `≥95.6%` for one that counts successes."""
        return f"≥{pct(1 - bound)}" if self.counts == "successes" else f"≤{pct(bound)}"

    @property
    def repeated(self) -> bool:
        """Whether the rate pools repeats of scenarios: then the scenario-clustered interval is its interval
        (repeats are not independent trials) and the per-conversation one is secondary."""
        return self.clustered is not None and self.rate is not None and self.clustered.scenarios < self.n

    @property
    def interval(self) -> tuple[float, float]:
        """The one interval of this figure, drawn by every renderer (terminal, HTML, JSON readers, safety
        case, desk, leaderboard, history): clustered over vignettes when the rate pools repeats or variants
        of a vignette, else Wilson (one conversation per vignette). `CITE` says so in words."""
        if self.repeated and self.clustered is not None:
            return self.clustered.low, self.clustered.high
        return self.low, self.high

    @property
    def interval_text(self) -> str:
        """The figure's one interval in a table cell, drawn by every renderer: `43.2%–98.5%`, or with nothing
        against the rate its one-sided bound on the vignettes (`≤12.7%`; `≥87.3%` for a rate of successes),
        the bound the report and the gate cite, never the two-sided interval beside it."""
        bound = self.shown_bound
        if bound is not None:
            return self._bound_short(bound)
        low, high = self.interval
        return f"{pct(low)}–{pct(high)}"

    @property
    def shown_bound(self) -> float | None:
        """The zero-failure bound to show: on the distinct scenarios when the rate pools repeats."""
        if self.repeated and self.clustered is not None:
            return self.clustered.bound
        return self.bound

    @property
    def missing_range(self) -> tuple[float, float] | None:
        """The rate had every errored case failed or passed, lowest first (a failure rate's "all failed" is
        its highest value); None when nothing errored."""
        if not self.errored or self.worst is None or self.best is None:
            return None
        return min(self.worst, self.best), max(self.worst, self.best)

    @property
    def errors_could_move(self) -> bool:
        """Whether the errored cases, had they all failed or all passed, would put the rate outside the
        interval shown: then the headline must carry the worst/best bounds beside it."""
        span = self.missing_range
        if span is None or self.rate is None:
            return False
        low, high = self.interval
        return span[0] < low or span[1] > high

    @property
    def moved(self) -> str:
        """`81.7%–93.3% if the 14 errored had all failed or passed` when the errored cases could move the
        rate across its interval, else ""."""
        span = self.missing_range
        if not self.errors_could_move or span is None:
            return ""
        return f"{pct(span[0])}–{pct(span[1])} if the {self.errored} errored had all {self._ends()}"

    def _moved(self) -> str:
        return f"; {self.moved}" if self.moved else ""

    def _ends(self) -> str:
        """Which way the errored cases push the low and the high end."""
        return "failed or passed" if self.counts == "successes" else "passed or failed"

    @property
    def short(self) -> str:
        """The compact form of every table cell, with the figure's one interval (`interval`) first: `21/24 87.5% (43.2–98.5% over 8 vignettes;
        per conversation 69.0–95.7%)`; with nothing against the rate its one-sided bound on the scenarios
        replaces the interval (`≤12.7% over 22 vignettes, one-sided; per conversation ≤4.4%`; `≥` for a rate
        of successes). Without repeats, `short`. The worst/best
        bounds follow when the errored cases could move the rate across its interval."""
        plain = self._plain_short()
        if not self.repeated or self.clustered is None:
            moved = self._moved()
            return f"{plain[:-1]}{moved})" if moved and self.rate is not None else plain
        c = self.clustered
        inner = f"{pct(c.low)}–{pct(c.high)} {c.over}"
        if c.bound is not None:  # one bound on the vignettes replaces the two-sided interval
            inner = f"{self._bound_short(c.bound)} {c.over}, one-sided"
        naive = f"per conversation {pct(self.low)}–{pct(self.high)}"
        if self.bound is not None:
            naive = f"per conversation {self._bound_short(self.bound)}"
        return f"{self.k}/{self.n} {pct(self.rate)} ({inner}; {naive}{self._moved()})"

    def _lead_text(self, plain: str) -> str:
        """The long form (`text`) with the figure's one interval (`interval`) first: `21/24 = 87.5% (95% CI 43.2%–98.5% over 8
        vignettes, vignette-clustered; per conversation 69.0%–95.7%)`; with no failures `no failures:
        failure rate ≤ 12.7% on 22 vignettes at 95% one-sided; per conversation ≤ 4.4%`. Without repeats,
        `plain` (the per-conversation form, `str(Rate)`). The worst/best bounds follow when the errored cases
        could move the rate across its interval. `rate_view` stores it as `text`, so no renderer can print the
        per-conversation interval alone."""
        moved = self._moved()
        if not self.repeated or self.clustered is None:
            return f"{plain[:-1]}{moved})" if moved and self.rate is not None else plain
        c = self.clustered
        level = f"{100 * self.confidence:g}%"
        inner = f"{level} CI {pct(c.low)}–{pct(c.high)} {c.over}, {c.clustered_by}"
        naive = f"per conversation {pct(self.low)}–{pct(self.high)}"
        if c.bound is not None:  # one bound on the vignettes replaces the two-sided interval
            inner = f"{bound_words(c.bound, self.counts)} {c.over}, {level} one-sided"
        if self.bound is not None:
            naive = f"per conversation {self._bound_short(self.bound)}"
        return f"{self.k}/{self.n} = {pct(self.rate)} ({inner}; {naive}{moved})"

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
    per_scenario: Sequence[tuple[int, int]] | None = None,
    errored: int = 0,
    unit: str = "vignettes",
) -> RateView:
    """Build a RateView from counts with `simulator.stats.basic.rate`, adding the runs needed for `target`.

    `share=True` is for a distribution (stop reasons), where "no failure seen" means nothing: no bound.
    `per_scenario` [(k, n), ...] (summing to k and n, one pair per cluster: a vignette, or `unit`) adds the
    clustered interval; `errored`
    cases left out of n add the worst- and best-case rates had each of them failed or passed.
    """
    r = rate(k, n, counts=counts, confidence=confidence)
    if share:
        ci = f"{100 * confidence:g}% CI {pct(r.low)}–{pct(r.high)}"
        text = f"{k}/{n} = n/a (no cases)" if r.rate is None else f"{k}/{n} = {pct(r.rate)} ({ci})"
        return RateView(
            k=k, n=n, rate=r.rate, low=r.low, high=r.high, counts=counts, confidence=confidence, text=text
        )
    extra = _extras(k, n, counts, confidence, per_scenario, errored, unit)
    needed = None
    if target is not None and r.zero_failure_bound is not None and r.zero_failure_bound > target:
        needed = runs_needed_for_bound(target, confidence)
    view = RateView(
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
        **extra,
    )
    view.text = view._lead_text(str(r))
    if "clustered" in extra and per_scenario is not None:
        view._per_scenario = [(a, b) for a, b in per_scenario if b > 0]
    return view


def _extras(
    k: int,
    n: int,
    counts: Counts,
    confidence: float,
    per_scenario: Sequence[tuple[int, int]] | None,
    errored: int,
    unit: str,
) -> dict[str, Any]:
    """The clustered view and the missing-data bounds, as RateView fields."""
    out: dict[str, Any] = {}
    if per_scenario is not None and n:
        pairs = [(a, b) for a, b in per_scenario if b > 0]
        if (sum(a for a, _ in pairs), sum(b for _, b in pairs)) != (k, n):
            raise ValueError(f"per-scenario counts do not add up to {k}/{n}")
        ci = clustered_interval(pairs, confidence)
        failures = k if counts == "failures" else n - k
        out["clustered"] = ClusteredView(
            low=ci.low,
            high=ci.high,
            scenarios=ci.scenarios,
            n_eff=ci.n_eff,
            design_effect=ci.design_effect,
            icc=ci.icc,
            bound=clustered_zero_failure_bound(ci.scenarios, confidence) if failures == 0 else None,
            unit=unit,
        )
    if errored:
        total = n + errored
        failed_all = (k + errored) / total if counts == "failures" else k / total
        passed_all = k / total if counts == "failures" else (k + errored) / total
        out.update(errored=errored, worst=failed_all, best=passed_all)
    return out
