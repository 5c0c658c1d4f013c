"""Bot faults as findings: the errors that are the bot's own doing (record/faults.py), counted per scenario.

A conversation that ended in a bot fault stays out of the clinical rates (it cannot say what the bot would
have advised), but the fault itself is evidence about the bot: a message the Cloud API refused reached no
patient. So it is counted here, with conversations as the unit and the interval clustered by vignette (a
scenario's base id: variants are not new evidence), per scenario, and marked when the scenario is critical
(tagged high-stakes, or expecting the critical outcome level).
"""

from __future__ import annotations

__all__ = ["BotFaultsSection", "bot_faults_section", "critical_scenarios"]

from collections import Counter, defaultdict

from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.models import ResultModel
from simulator.record.faults import BOT_FAULTS, bot_faults
from simulator.record.models import ConversationRecord
from simulator.stats.rates import RateView, rate_view

_EXAMPLES = 2  # faults quoted per scenario


class FaultExample(ResultModel):
    """One fault as the record shows it, with the conversation to read."""

    conversation_id: str
    kind: str
    detail: str


class FaultScenarioRow(ResultModel):
    """One scenario with a bot fault: in how many of its conversations, of which kinds, and examples."""

    scenario_id: str
    critical: bool
    rate: RateView  # conversations with a fault, of the scenario's conversations
    kinds: dict[str, int]
    examples: list[FaultExample]


class BotFaultsSection(ResultModel):
    """The bot's faults over the run: the rate (conversations, clustered by vignette), per kind and scenario."""

    rate: RateView
    kinds: dict[str, int]  # kind -> conversations with it
    scenarios: list[FaultScenarioRow]
    # What the rate counts and what the clinical rates do with these conversations, in words.
    covers: str


def critical_scenarios(run: RunData, high_stakes_tag: str | None) -> set[str]:
    """The scenarios a fault there is a headline for: the high-stakes tag, or the critical outcome expected."""
    critical = {s for s, tags in run.scenario_tags().items() if high_stakes_tag and high_stakes_tag in tags}
    outcome = run.outcome
    if outcome is not None:
        level = outcome.critical or outcome.levels[-1]
        critical |= {s for s, expected in run.expected.items() if expected.get(outcome.key) == level}
    return critical


def bot_faults_section(run: RunData, high_stakes_tag: str | None = None) -> BotFaultsSection | None:
    """The section, or None when no conversation holds a bot fault (a report without faults says nothing)."""
    faulted: dict[str, list[tuple[ConversationRecord, list[str], list[FaultExample]]]] = defaultdict(list)
    totals: Counter[str] = Counter()
    for record in run.conversations:
        totals[record.scenario_id] += 1
        faults = bot_faults(record)
        if faults:
            examples = [FaultExample(conversation_id=record.id, kind=f.kind, detail=f.detail) for f in faults]
            faulted[record.scenario_id].append((record, sorted({f.kind for f in faults}), examples))
    if not faulted:
        return None
    critical = critical_scenarios(run, high_stakes_tag)
    rows = []
    for scenario_id in run.scenario_order:
        found = faulted.get(scenario_id)
        if not found:
            continue
        kinds = Counter(kind for _, ks, _ in found for kind in ks)
        rows.append(
            FaultScenarioRow(
                scenario_id=scenario_id,
                critical=scenario_id in critical,
                rate=rate_view(len(found), totals[scenario_id]),
                kinds=dict(sorted(kinds.items())),
                examples=[example for _, _, examples in found for example in examples][:_EXAMPLES],
            )
        )
    per_vignette: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for scenario_id, total in totals.items():
        cell = per_vignette[vignette_of(scenario_id)]
        cell[0] += len(faulted.get(scenario_id, []))
        cell[1] += total
    k, n = sum(c[0] for c in per_vignette.values()), sum(c[1] for c in per_vignette.values())
    kinds = Counter(kind for found in faulted.values() for _, ks, _ in found for kind in ks)
    errored = sum(1 for found in faulted.values() for record, _, _ in found if record.error is not None)
    return BotFaultsSection(
        rate=rate_view(k, n, per_scenario=[(a, b) for a, b in per_vignette.values()]),
        kinds={kind: kinds[kind] for kind in BOT_FAULTS if kind in kinds},
        scenarios=rows,
        covers=(
            f"unit: conversations with at least one bot fault, of all {n}, clustered by vignette. The {errored} "
            "that ended in the fault are left out of every clinical rate (they cannot say what the bot would "
            "have advised); a tool call refused for its arguments does not end a conversation, which still counts"
        ),
    )
