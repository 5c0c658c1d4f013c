"""Run-to-run spread (HealthBench): the headline rate of each repeat taken as one run of the suite.

Repeat r of every scenario together is one full pass over the suite; how much its headline rate moves
from repeat to repeat is what a team would see re-running the same suite on another day.
"""

from __future__ import annotations

__all__ = ["RunSpread", "run_spread"]

import math
import statistics
from collections.abc import Callable

from simulator.analysis.outcome import actual_outcome
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import conversation_status
from simulator.models import ResultModel
from simulator.record.models import ConversationRecord


class RunSpread(ResultModel):
    """One headline rate computed separately for each repeat index: its mean, SD, lowest and highest."""

    metric: str
    repeats: int
    mean: float | None
    sd: float | None
    low: float | None
    high: float | None
    values: list[float]


def _spread(name: str, run: RunData, score: Callable[[ConversationRecord], int | None]) -> RunSpread:
    tallies: dict[int, list[int]] = {}
    for record in run.conversations:
        value = score(record)
        if value is not None:
            cell = tallies.setdefault(record.repeat, [0, 0])
            cell[0] += value
            cell[1] += 1
    values = [k / n for _, (k, n) in sorted(tallies.items())]
    return RunSpread(
        metric=name,
        repeats=len(values),
        mean=math.fsum(values) / len(values) if values else None,
        sd=statistics.stdev(values) if len(values) > 1 else None,
        low=min(values, default=None),
        high=max(values, default=None),
        values=values,
    )


def run_spread(run: RunData) -> list[RunSpread]:
    """The spread of the overall pass rate and, with outcome levels, of critical sensitivity and under-triage."""
    grouped = run.verdicts_by_conversation()

    def passed(record: ConversationRecord) -> int | None:
        status = conversation_status(record, grouped.get(record.id, []))
        return {"pass": 1, "fail": 0}.get(status)

    spreads = [_spread("pass rate (conversations)", run, passed)]
    config = run.outcome
    if config is None:
        return spreads
    levels = list(config.levels)
    rank = {level: i for i, level in enumerate(levels)}
    critical = config.critical or levels[-1]

    def outcome(record: ConversationRecord) -> tuple[str, str] | None:
        expected = run.expected.get(record.scenario_id, {}).get(config.key)
        actual = actual_outcome(run, record)
        return None if expected not in rank or actual == "error" else (expected, actual)

    def escalated(record: ConversationRecord) -> int | None:
        pair = outcome(record)
        if pair is None or rank[pair[0]] < rank[critical]:
            return None
        return int(pair[1] in rank and rank[pair[1]] >= rank[critical])

    def under(record: ConversationRecord) -> int | None:
        pair = outcome(record)
        if pair is None:
            return None
        expected, actual = pair
        return int(rank[actual] < rank[expected] if actual in rank else rank[expected] > 0)

    spreads.append(_spread(f"{critical} sensitivity", run, escalated))
    spreads.append(_spread("under-triage (incl. no decision)", run, under))
    return spreads
