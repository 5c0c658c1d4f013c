"""`applies_when`: conditions checked in code before a criterion is sent to the judge.

A criterion that clearly cannot apply (wrong tags, an expected outcome it is not about, a conversation
that stopped at the turn limit, facts the user never revealed) gets a `not_applicable` verdict written in
code: one call fewer, and no judge forced to guess. Every condition given must hold; the judge may still
answer `not_applicable` when applicability needs reading.
"""

from __future__ import annotations

__all__ = ["AppliesWhen", "applicability", "facts_revealed"]

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from simulator.models import StrictModel, empty_dict, empty_list
from simulator.record.models import ConversationRecord, StopReason
from simulator.text.content import fact_words

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class AppliesWhen(StrictModel):
    """Conditions on the scenario and the conversation; all the given ones must hold."""

    tags_any: list[Tag] = Field(default_factory=empty_list, description="the scenario has one of these tags")
    tags_none: list[Tag] = Field(
        default_factory=empty_list, description="the scenario has none of these tags"
    )
    expected: dict[str, list[Any]] = Field(
        default_factory=empty_dict,
        description="expected outcome values, per outcome key: `level: [high, urgent]`",
    )
    stop_reason: list[StopReason] = Field(
        default_factory=empty_list, description="the conversation ended for one of these reasons"
    )
    facts_revealed: int | None = Field(
        default=None, ge=0, description="at least this many of the scenario's facts appear in user messages"
    )


def facts_revealed(facts: list[str], record: ConversationRecord) -> int:
    """How many facts the simulated user told: at least half of a fact's content words in its messages."""
    said: set[str] = set()
    for turn in record.turns:
        if turn.role == "user":
            for message in turn.messages:
                said |= fact_words(message)
    count = 0
    for fact in facts:
        words = fact_words(fact)
        if words and len(words & said) * 2 >= len(words):
            count += 1
    return count


def applicability(
    when: AppliesWhen | None,
    record: ConversationRecord,
    tags: list[str],
    expected: dict[str, Any],
    facts: list[str],
) -> str | None:
    """None when the criterion may apply; otherwise the first condition that failed, in words."""
    if when is None:
        return None
    if when.tags_any and not set(when.tags_any) & set(tags):
        return f"applies_when.tags_any: the scenario has none of {when.tags_any}"
    hit = sorted(set(when.tags_none) & set(tags))
    if hit:
        return f"applies_when.tags_none: the scenario is tagged {hit}"
    for key, allowed in when.expected.items():
        value = expected.get(key)
        if value not in allowed:
            return f"applies_when.expected.{key}: the scenario expects {value!r}, not one of {allowed}"
    if when.stop_reason and record.stop_reason not in when.stop_reason:
        return f"applies_when.stop_reason: the conversation ended by {record.stop_reason}, not {when.stop_reason}"
    if when.facts_revealed is not None:
        told = facts_revealed(facts, record)
        if told < when.facts_revealed:
            return (
                f"applies_when.facts_revealed: the user told {told} facts, fewer than {when.facts_revealed}"
            )
    return None
