"""Missing data made visible: where errored conversations are, and whether they are missing at random.

Every rate leaves errored conversations out of its counts and shows, beside it, the rate had each of them
failed or passed (RateView.worst/best). That is enough when errors strike at random. When they concentrate
in some scenarios, or late in long conversations, the rate without them is biased (a bot that crashes
in the long, hard conversations looks better than it is); these tests say so.
"""

from __future__ import annotations

__all__ = ["MissingData", "ScenarioErrors", "binomial_test", "missing_data", "moved_warning"]

from collections import Counter

from simulator.analysis.rundata import RunData
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord
from simulator.record.stored_turns import turn_facts
from simulator.stats.basic import binomial_test
from simulator.stats.dist import chi2_sf
from simulator.stats.rates import RateView, pct

ALPHA = 0.05


class ScenarioErrors(_Model):
    """One scenario's errored conversations among all its conversations."""

    scenario_id: str
    errored: int
    conversations: int


class MissingData(_Model):
    """Errored conversations, by scenario and by turn, with the tests of whether they cluster."""

    conversations: int
    errored: int
    scenarios: list[ScenarioErrors]
    scenario_p_value: float | None
    early_turn_rate: float | None
    late_turn_rate: float | None
    turn_split: int | None
    turn_p_value: float | None
    warnings: list[str]


def _reached(record: ConversationRecord) -> int:
    """Turns of the user the conversation reached (an error ends it at the turn the bot failed to answer)."""
    return max(1, sum(1 for turn in turn_facts(record) if turn.role == "user"))


def _scenario_test(cells: list[ScenarioErrors]) -> float | None:
    """Chi-square test that every scenario errors at the same rate (2 x G table), or None if untestable."""
    total = sum(c.conversations for c in cells)
    errors = sum(c.errored for c in cells)
    if len(cells) < 2 or errors in (0, total):
        return None
    share = errors / total
    stat = 0.0
    for cell in cells:
        for observed, expected in (
            (cell.errored, cell.conversations * share),
            (cell.conversations - cell.errored, cell.conversations * (1 - share)),
        ):
            stat += (observed - expected) ** 2 / expected
    return chi2_sf(stat, len(cells) - 1)


def _turn_test(
    records: list[ConversationRecord],
) -> tuple[int | None, float | None, float | None, float | None]:
    """Errors per turn at risk, early (turns <= the median reached) against late; exact binomial p-value."""
    reached = sorted(_reached(r) for r in records)
    errored = [r for r in records if r.stop_reason == "error"]
    if not errored or len(reached) < 2:
        return None, None, None, None
    split = reached[(len(reached) - 1) // 2]
    at_risk = Counter[int]()
    for turns in reached:
        for t in range(1, turns + 1):
            at_risk[t] += 1
    early = sum(v for t, v in at_risk.items() if t <= split)
    late = sum(v for t, v in at_risk.items() if t > split)
    late_errors = sum(1 for r in errored if _reached(r) > split)
    if not late or not early:
        return split, None, None, None
    p = binomial_test(late_errors, len(errored), late / (early + late))
    return split, (len(errored) - late_errors) / early, late_errors / late, p


def missing_data(run: RunData) -> MissingData:
    """Where the errored conversations are, and warnings when they are not spread at random."""
    by_scenario: dict[str, list[ConversationRecord]] = {}
    for record in run.conversations:
        by_scenario.setdefault(record.scenario_id, []).append(record)
    cells = [
        ScenarioErrors(
            scenario_id=sid, errored=sum(r.stop_reason == "error" for r in recs), conversations=len(recs)
        )
        for sid, recs in by_scenario.items()
    ]
    errored = sum(c.errored for c in cells)
    scenario_p = _scenario_test(cells)
    split, early, late, turn_p = _turn_test(run.conversations)
    warnings = []
    if scenario_p is not None and scenario_p < ALPHA:
        worst = sorted((c for c in cells if c.errored), key=lambda c: -c.errored / c.conversations)[:3]
        named = ", ".join(f"{c.scenario_id} {c.errored}/{c.conversations}" for c in worst)
        warnings.append(
            f"errors concentrate in some scenarios (chi-square p={scenario_p:.2g}: {named}); rates that "
            "leave them out may be biased: read the worst/best-case bounds"
        )
    if turn_p is not None and turn_p < ALPHA and late is not None and early is not None and late > early:
        warnings.append(
            f"errors concentrate in long conversations: {pct(late, 2)} of turns after turn {split} errored "
            f"against {pct(early, 2)} up to it (p={turn_p:.2g}); the conversations left out are the long ones"
        )
    return MissingData(
        conversations=len(run.conversations),
        errored=errored,
        scenarios=[c for c in cells if c.errored],
        scenario_p_value=scenario_p,
        early_turn_rate=early,
        late_turn_rate=late,
        turn_split=split,
        turn_p_value=turn_p,
        warnings=warnings,
    )


def moved_warning(rates: list[tuple[str, RateView]]) -> list[str]:
    """One warning naming every rate the errored conversations could move across its interval.

    The tests above see errors that cluster in scenarios or in long conversations; a bot that crashes on
    the very cases it would fail can hide from both (its crashes spread over the scenarios) while its rate
    without them is biased. What the data does show is how far the errored cases could move each rate:
    when that reaches past the interval, the rate must be read as its worst/best range.
    """
    moved = []
    errored = 0
    for name, value in rates:
        span = value.missing_range
        if span is None or not value.errors_could_move:
            continue
        low, high = value.interval
        moved.append(
            f"{name} {pct(value.rate)} (95% CI {pct(low)}–{pct(high)}) to {pct(span[0])}–{pct(span[1])}"
        )
        errored = max(errored, value.errored)
    if not moved:
        return []
    return [
        f"errors could concentrate in the cases that fail: had the {errored} errored conversations all "
        f"failed or all passed, they would move {'; '.join(moved)}; read each rate as that range"
    ]
