"""Who varied in a flaky scenario: the bot, the simulated user, or the judge.

A scenario with mixed outcomes is flaky, but the fix depends on the source. Pair each failing repeat with
each passing one and find the first turn where the two transcripts differ: if it is a user turn, the
simulated user said something different (a flaky simulation: its randomness, not the bot, may explain the
failure); if it is a bot turn, the bot answered the same history differently (a flaky bot); if the
transcripts and final states are identical, only the verdicts differ (a flaky judge).
"""

from __future__ import annotations

__all__ = ["SOURCES", "Attribution", "attribute_variance", "first_divergence"]

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict

from simulator.record.models import ConversationRecord

Source = Literal["bot", "simulation", "judge"]
SOURCES: tuple[Source, ...] = ("bot", "simulation", "judge")
_MAX_EACH = 20  # repeats compared on each side: enough to see the sources, O(repeats) per scenario


class Attribution(BaseModel):
    """Pairs of (failing, passing) repeats by where they first differed, and the sources that varied."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    pairs: int
    bot: int
    simulation: int
    judge: int
    sources: list[str]

    @property
    def label(self) -> str:
        """`bot`, `simulation`, `judge`, or several joined by `+`."""
        return "+".join(self.sources)


def first_divergence(a: ConversationRecord, b: ConversationRecord) -> Source:
    """Where two transcripts of the same scenario first differ: at a user turn, a bot turn, or nowhere."""
    for turn_a, turn_b in zip(a.turns, b.turns, strict=False):
        if turn_a.role != turn_b.role or turn_a.messages != turn_b.messages:
            return "simulation" if turn_a.role == "user" else "bot"
    if len(a.turns) != len(b.turns):
        # One side stopped where the other went on: whoever's turn came next chose differently.
        longer = a.turns if len(a.turns) > len(b.turns) else b.turns
        return "simulation" if longer[min(len(a.turns), len(b.turns))].role == "user" else "bot"
    if a.final_state != b.final_state or a.stop_reason != b.stop_reason:
        return "bot"
    return "judge"


def attribute_variance(failing: list[ConversationRecord], passing: list[ConversationRecord]) -> Attribution:
    """Attribute a flaky scenario's variation from up to 20 failing and 20 passing repeats."""
    counts: Counter[str] = Counter()
    # Each record's turns read once (a report's records may keep them in the run folder: StoredTurns).
    bads, goods = (
        [r.model_copy(update={"turns": list(r.turns)}) for r in side[:_MAX_EACH]]
        for side in (failing, passing)
    )
    for bad in bads:
        for good in goods:
            counts[first_divergence(bad, good)] += 1
    return Attribution(
        pairs=sum(counts.values()),
        bot=counts["bot"],
        simulation=counts["simulation"],
        judge=counts["judge"],
        sources=[s for s in SOURCES if counts[s]],
    )
