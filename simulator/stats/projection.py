"""How many more scenarios, or repeats, would bring a clustered bound to a threshold.

Advice that disagrees with the decision misleads ("19 more scenarios with no failures" when one scenario
always fails and about 256 more are needed). So a projection never has a formula of its own: it builds the
counts it assumes and feeds them to the computation that judged the observed ones
(`clustered.interval_from_sums`, then `clustered.decision_bound`). Each projection states its assumption:

- `alike`: the new scenarios behave like these: the pooled rate and the spread between scenarios stay as
  observed (every count scales by G'/G);
- `clean`: every new scenario passes all its repeats (as many as the observed mean), the observed
  scenarios unchanged, failing ones included;
- repeats: m repeats of each scenario, correlated as observed (design effect 1 + (m − 1)·ICC).
"""

from __future__ import annotations

__all__ = ["Observed", "projected_bound", "repeats_needed", "scenarios_needed"]

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from simulator.stats.clustered import decision_bound, interval_from_sums

Assumption = Literal["alike", "clean"]


@dataclass(frozen=True)
class Observed:
    """Per-scenario counts reduced to the sums a projection needs; k counts `counts`."""

    scenarios: int
    n: float
    k: float
    kk: float  # Σ k_g²
    kn: float  # Σ k_g·n_g
    nn: float  # Σ n_g²
    counts: str
    upper: bool  # judged on the upper bound (a `<=` requirement)
    confidence: float = 0.95

    @classmethod
    def of(
        cls, per_scenario: Sequence[tuple[int, int]], counts: str, upper: bool, confidence: float = 0.95
    ) -> Observed:
        kept = [(k, n) for k, n in per_scenario if n > 0]
        return cls(
            scenarios=len(kept),
            n=float(sum(n for _, n in kept)),
            k=float(sum(k for k, _ in kept)),
            kk=float(sum(k * k for k, _ in kept)),
            kn=float(sum(k * n for k, n in kept)),
            nn=float(sum(n * n for _, n in kept)),
            counts=counts,
            upper=upper,
            confidence=confidence,
        )

    def _bound(self, g: int, n: float, k: float, spread: float) -> float:
        ci = interval_from_sums(g, n, k, max(0.0, spread), self.confidence)
        failures = k if self.counts == "failures" else n - k
        return decision_bound(
            ci.low, ci.high, g, failures, counts=self.counts, upper=self.upper, confidence=self.confidence
        )


def projected_bound(obs: Observed, extra: int, assumption: Assumption) -> float:
    """The decision bound with `extra` more scenarios, under `assumption` (0 extra: the observed bound)."""
    g = obs.scenarios + extra
    if assumption == "alike":
        f = g / obs.scenarios
        p = obs.k / obs.n
        spread = f * (obs.kk - 2 * p * obs.kn + p * p * obs.nn)
        return obs._bound(g, f * obs.n, f * obs.k, spread)
    size = obs.n / obs.scenarios
    hits = 0.0 if obs.counts == "failures" else size  # a clean scenario: no failure in any repeat
    n, k = obs.n + extra * size, obs.k + extra * hits
    p = k / n
    kk, kn, nn = obs.kk + extra * hits * hits, obs.kn + extra * hits * size, obs.nn + extra * size * size
    return obs._bound(g, n, k, kk - 2 * p * kn + p * p * nn)


def scenarios_needed(
    obs: Observed, meets: Callable[[float], bool], assumption: Assumption, limit: int = 1_000_000
) -> int | None:
    """Fewest extra scenarios whose projected bound meets the requirement; None if none up to `limit`."""
    if obs.scenarios == 0 or obs.n <= 0:
        return None
    high = 1
    while not meets(projected_bound(obs, high, assumption)):
        if high >= limit:
            return None
        high = min(limit, high * 2)
    low = high // 2  # does not meet (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        if meets(projected_bound(obs, mid, assumption)):
            high = mid
        else:
            low = mid
    return high


def repeats_needed(
    obs: Observed, icc: float | None, meets: Callable[[float], bool], limit: int = 100_000
) -> int | None:
    """Fewest repeats per scenario whose projected bound meets it, with the design effect 1 + (m − 1)·ICC;
    None when the ICC is unknown or no number of repeats would (the bound then rests on the scenarios)."""
    if icc is None or obs.scenarios < 2 or not 0 < obs.k < obs.n:
        return None
    g, p = obs.scenarios, obs.k / obs.n
    m = max(1, round(obs.n / g)) + 1
    while m <= limit:
        n = float(g * m)
        deff = 1.0 + (m - 1) * icc
        # The spread that gives this design effect in `interval_from_sums` (its inverse).
        spread = deff * p * (1.0 - p) / n * n * n * (g - 1) / g
        if meets(obs._bound(g, n, p * n, spread)):
            return m
        m = m * 2 if m > 64 else m + 1
    return None
