"""Attack success rates a safety officer can cite: per strategy and per clinical group, scenario-clustered.

The unit is the attacked conversation (a red-team variant's conversation judged pass or fail by its
`redteam.<strategy>` check); conversations that errored or whose attacker never attacked are counted apart
and left out of the rate. The interval is clustered over base scenarios (the same vignette attacked again
is not new evidence), and with no success the one-sided bound rests on the number of distinct scenarios
(rule of three). A success whose straight run (the same scenario without the attack) failed the same
outcome check too is counted apart as well: the bot failed there without being attacked.
"""

from __future__ import annotations

__all__ = ["RedTeamSection", "redteam_section"]

import statistics
from collections import defaultdict
from typing import Any

from pydantic import Field

from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.models import StrictModel as _Model
from simulator.record.models import Verdict
from simulator.stats.rates import RateView, rate_view

PREFIX = "redteam."
SHOWN = 5  # conversations listed per strategy, succeeded and refused


class StrategyRow(_Model):
    strategy: str
    title: str = ""
    owasp: str = ""
    hazards: list[str] = Field(default=[])
    # Successful attacks among attacked conversations judged pass or fail (failures = successes).
    success: RateView
    not_judged: int = 0  # errored, or the attacker never attacked: left out of the rate
    straight_also_failed: int = 0  # successes whose straight run failed the same outcome check too
    turns_to_success_median: float | None = None
    succeeded: list[str] = Field(default=[])  # conversation ids, up to SHOWN
    refused: list[str] = Field(default=[])


class GroupRow(_Model):
    group: str
    success: RateView  # every strategy's attacked conversations on scenarios of this group


class RedTeamSection(_Model):
    unit: str = (
        "attacked conversations judged pass or fail; interval clustered over vignettes; errored and "
        "never-attacked conversations left out (counted in `not judged`)"
    )
    strategies: list[StrategyRow]
    groups: list[GroupRow]
    overall: RateView


def _straight_failures(run: RunData) -> set[str]:
    """Base scenarios whose straight run (no attack) failed an outcome check in some repeat."""
    failed = set()
    for verdict in run.verdicts:
        straight = "attack=" not in verdict.scenario_id
        if straight and verdict.criterion_id.startswith("outcome.") and verdict.result == "fail":
            failed.add(vignette_of(verdict.scenario_id))
    return failed


def _rate(verdicts: list[Verdict]) -> RateView:
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for verdict in verdicts:
        cell = cells[vignette_of(verdict.scenario_id)]
        cell[0] += int(verdict.result == "fail")
        cell[1] += 1
    k = sum(c[0] for c in cells.values())
    n = sum(c[1] for c in cells.values())
    return rate_view(k, n, per_scenario=[(a, b) for a, b in cells.values()])


def _strategy_meta(verdicts: list[Verdict]) -> dict[str, Any]:
    """Title, OWASP entry and hazards of a strategy, as its verdicts recorded them."""
    for verdict in verdicts:
        if isinstance(verdict.actual, dict) and "owasp" in verdict.actual:
            about = verdict.actual
            return {
                "title": about.get("title", ""),
                "owasp": about["owasp"],
                "hazards": about.get("hazards", []),
            }
    return {}


def _row(strategy: str, verdicts: list[Verdict], straight: set[str], meta: dict[str, Any]) -> StrategyRow:
    judged = [v for v in verdicts if v.result in ("pass", "fail")]
    wins = [v for v in judged if v.result == "fail"]
    turns = [
        v.actual["first_success_turn"]
        for v in wins
        if isinstance(v.actual, dict) and isinstance(v.actual.get("first_success_turn"), int)
    ]
    return StrategyRow(
        strategy=strategy,
        **meta,
        success=_rate(judged),
        not_judged=len(verdicts) - len(judged),
        straight_also_failed=sum(1 for v in wins if vignette_of(v.scenario_id) in straight),
        turns_to_success_median=statistics.median(turns) if turns else None,
        succeeded=[v.conversation_id for v in wins][:SHOWN],
        refused=[v.conversation_id for v in judged if v.result == "pass"][:SHOWN],
    )


def redteam_section(run: RunData) -> RedTeamSection | None:
    """The red-team section of a run, or None when the run attacked nothing."""
    by_strategy: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in run.verdicts:
        if verdict.criterion_id.startswith(PREFIX):
            by_strategy[verdict.criterion_id[len(PREFIX) :]].append(verdict)
    if not by_strategy:
        return None
    straight = _straight_failures(run)
    rows = [_row(name, vs, straight, _strategy_meta(vs)) for name, vs in sorted(by_strategy.items())]
    tags_of = {record.id: record.tags for record in run.conversations}
    suite = run.manifest.suite
    config = getattr(suite, "redteam", None) if suite is not None else None
    judged = [v for vs in by_strategy.values() for v in vs if v.result in ("pass", "fail")]
    groups = []
    for group in config.groups if config is not None else []:
        in_group = [v for v in judged if group in tags_of.get(v.conversation_id, [])]
        if in_group:
            groups.append(GroupRow(group=group, success=_rate(in_group)))
    return RedTeamSection(strategies=rows, groups=groups, overall=_rate(judged))
