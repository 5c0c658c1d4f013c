"""Rates over time for collected conversations: per criterion (fail rate) and per quality signal, by day,
week or every N conversations, with clustered intervals and a test of change against a reference window.

The unit is the conversation; conversations of one user (`user.id` / `enduser.id` in the spans) form one
cluster, so a user with many conversations does not narrow the interval as if each were independent
(the clustered interval of simulator/stats/clustered.py, users in place of scenarios). A criterion's
rate counts pass and fail verdicts only: not applicable, errors and not judged are left out, and counted.
"""

from __future__ import annotations

__all__ = ["Observation", "TrendRow", "load_observations", "metric_names", "rate_of", "trend_rows"]

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from simulator.collect.folders import SIGNALS
from simulator.collect.signals import BOOLEAN_SIGNALS
from simulator.record.folder import RunFolder
from simulator.stats.clustered import clustered_interval
from simulator.stats.twosample import fisher_exact, newcombe_difference


@dataclass
class Observation:
    """One collected conversation: when, whose, its signals and its latest verdict per criterion."""

    conversation: str  # folder/conversation id
    started_at: datetime
    cluster: str
    signals: dict[str, object]
    results: dict[str, str] = field(default_factory=dict)  # criterion -> pass/fail/not_applicable/...


def _latest_results(folder: Path) -> dict[str, dict[str, str]]:
    latest: dict[str, dict[str, str]] = defaultdict(dict)
    for verdict in RunFolder.open(folder).verdicts():
        if not verdict.is_sample and verdict.kind != "fidelity":
            latest[verdict.conversation_id][verdict.criterion_id] = verdict.result
    return latest


def load_observations(folders: Sequence[Path], last: int | None = None) -> list[Observation]:
    """Every conversation of the collector's folders in time order (the `last` ones only, when given:
    the newest folders are read first and the rest left unread)."""
    out: list[Observation] = []
    for folder in reversed(list(folders)):
        path = folder / SIGNALS
        if not path.exists():
            continue
        results = _latest_results(folder)
        batch = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                signals = json.loads(line)
                started = datetime.fromisoformat(signals["started_at"])
            except (ValueError, KeyError):
                continue
            cid = str(signals["conversation_id"])
            cluster = str(signals.get("user") or f"{folder.name}/{cid}")
            batch.append(Observation(f"{folder.name}/{cid}", started, cluster, signals, results.get(cid, {})))
        out = batch + out
        if last is not None and len(out) >= last:
            break
    out.sort(key=lambda o: o.started_at)
    return out[-last:] if last is not None else out


def metric_names(observations: Sequence[Observation], criteria: Sequence[str] = ()) -> list[str]:
    """The metrics an alert or a trend may name: `fail_rate:<criterion>` and `signal:<name>`."""
    judged = {c for o in observations for c in o.results} | set(criteria)
    return [f"fail_rate:{c}" for c in sorted(judged)] + [f"signal:{s}" for s in BOOLEAN_SIGNALS]


def _outcome(observation: Observation, metric: str) -> bool | None:
    """True for a failure / a signal present, False for a pass / absent, None when it does not count."""
    kind, _, name = metric.partition(":")
    if kind == "signal":
        return bool(observation.signals.get(name))
    result = observation.results.get(name)
    return {"fail": True, "pass": False}.get(result or "")


@dataclass
class Rate:
    metric: str
    k: int
    n: int
    left_out: int
    clusters: int
    rate: float | None
    low: float
    high: float
    conversations: list[str]  # the ones counted as failures / with the signal


def rate_of(observations: Sequence[Observation], metric: str) -> Rate:
    """The metric's rate over these conversations, its clustered 95% interval and what it left out."""
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    hits: list[str] = []
    left_out = 0
    for observation in observations:
        outcome = _outcome(observation, metric)
        if outcome is None:
            left_out += 1
            continue
        cell = per[observation.cluster]
        cell[0] += int(outcome)
        cell[1] += 1
        if outcome:
            hits.append(observation.conversation)
    k = sum(c[0] for c in per.values())
    n = sum(c[1] for c in per.values())
    interval = clustered_interval([(a, b) for a, b in per.values()])
    return Rate(metric, k, n, left_out, len(per), k / n if n else None, interval.low, interval.high, hits)


@dataclass
class TrendRow:
    """One metric in one period, and its change against the reference window."""

    period: str
    rate: Rate
    reference: Rate | None = None
    p_value: float | None = None
    difference: tuple[float, float] | None = None  # 95% interval of (this period - reference)


def _period(observation: Observation, period: str, index: int) -> str:
    if period == "day":
        return observation.started_at.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = observation.started_at.isocalendar()
        return f"{year}-W{week:02d}"
    size = int(period)
    return f"#{index // size * size + 1}-{index // size * size + size}"


def trend_rows(
    observations: Sequence[Observation],
    metrics: Sequence[str],
    period: str = "day",
    reference: Sequence[Observation] | None = None,
) -> list[TrendRow]:
    """Each metric per period; each period tested against `reference` (default: the first period)."""
    if period not in ("day", "week") and not (period.isdigit() and int(period) > 0):
        raise ValueError(f"period {period!r}: use day, week or a number of conversations")
    groups: dict[str, list[Observation]] = {}
    for index, observation in enumerate(observations):
        groups.setdefault(_period(observation, period, index), []).append(observation)
    first = next(iter(groups.values()), [])
    base = list(reference) if reference is not None else first
    rows = []
    for metric in metrics:
        ref = rate_of(base, metric)
        for name, group in groups.items():
            row = TrendRow(name, rate_of(group, metric), ref)
            row.p_value, row.difference = change(row.rate, ref)
            rows.append(row)
    return rows


def change(current: Rate, reference: Rate) -> tuple[float | None, tuple[float, float] | None]:
    """Fisher's exact test of the two rates, and Newcombe's 95% interval of their difference."""
    if not current.n or not reference.n:
        return None, None
    p = fisher_exact(current.k, current.n - current.k, reference.k, reference.n - reference.k)
    diff = newcombe_difference(current.k, current.n, reference.k, reference.n)
    return p, (diff.low, diff.high)
