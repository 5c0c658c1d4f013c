"""Unbacked claims as findings: where the bot said it did (or will do) something nothing backs.

The claim rules (config/claims.py; the suite's own, else the defaults) write a `fail` verdict with the
claim quoted when no tool call backs it (judging/tool_checks.py). The criteria table counts those verdicts;
this gathers them per rule and scenario with the first quote, so the summary can name the claim itself
("A nurse will call you back within 2 hours.") and the scenarios where it was made.
"""

from __future__ import annotations

__all__ = ["UnbackedClaim", "unbacked_claims"]

from collections import defaultdict

from simulator.analysis.bot_faults import critical_scenarios
from simulator.analysis.rundata import RunData
from simulator.config.tool_checks import ToolChecksConfig
from simulator.models import ResultModel
from simulator.record.models import Verdict
from simulator.stats.rates import RateView, rate_view


class UnbackedClaim(ResultModel):
    """One claim rule failing in one scenario: in how many of its conversations, the claim quoted."""

    criterion_id: str
    scenario_id: str
    critical: bool  # the scenario is high-stakes or expects the critical outcome level
    severity: str | None
    failed: RateView  # conversations with the claim unbacked, of the scenario's conversations
    quote: str
    conversation_id: str
    reasoning: str


def _claim_ids(run: RunData) -> set[str]:
    suite = run.manifest.suite
    config = (suite.tool_checks if suite is not None else None) or ToolChecksConfig()
    return {rule.id for rule in config.claim_rules()}


def unbacked_claims(run: RunData, high_stakes_tag: str | None = None) -> list[UnbackedClaim]:
    """Each (claim rule, scenario) with a failed claim verdict, in scenario order, then rule id."""
    ids = _claim_ids(run)
    failed: dict[tuple[str, str], list[Verdict]] = defaultdict(list)
    for verdict in run.verdicts:
        if verdict.criterion_id in ids and verdict.result == "fail":
            failed[(verdict.scenario_id, verdict.criterion_id)].append(verdict)
    if not failed:
        return []
    totals: dict[str, int] = defaultdict(int)
    for record in run.conversations:
        totals[record.scenario_id] += 1
    critical = critical_scenarios(run, high_stakes_tag)
    order = {scenario: i for i, scenario in enumerate(run.scenario_order)}
    rows = []
    for (scenario_id, criterion_id), verdicts in sorted(
        failed.items(), key=lambda item: (order.get(item[0][0], len(order)), item[0][1])
    ):
        first = verdicts[0]
        conversations = {v.conversation_id for v in verdicts}
        rows.append(
            UnbackedClaim(
                criterion_id=criterion_id,
                scenario_id=scenario_id,
                critical=scenario_id in critical,
                severity=first.severity,
                failed=rate_view(len(conversations), max(totals[scenario_id], len(conversations))),
                quote=first.evidence[0].quote if first.evidence else "",
                conversation_id=first.conversation_id,
                reasoning=first.reasoning,
            )
        )
    return rows
