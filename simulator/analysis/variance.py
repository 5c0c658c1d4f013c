"""Who varied in a flaky scenario: the bot, the simulated user, or the judge.

A scenario with mixed outcomes is flaky, but the fix depends on the source. Pair each failing repeat with
each passing one and find the first turn where the two transcripts differ. A bot turn: the bot answered the
same history differently (a flaky bot: observed, the transcripts are identical up to that turn). Identical transcripts and final states: only the verdicts differ (a
flaky judge). A user turn is not enough to blame the simulation, since a simulated user rewords every time
(the offline user varies its greeting); it is a flaky simulation only on evidence:

- the fidelity audit failed the simulated user in either conversation, or
- the fact provenance shows the user changed what the bot learned: a fact volunteered unasked in one
  conversation never came up in the other.

When both were audited and the user revealed the same facts in other words (or typos), the pair is
`reworded`: the bot's answer differed after the user's wording differed. That is not a flaky bot (its
history was not the same): either the bot is not robust to the wording or it varies on its own, and one
pair cannot tell which. When nothing audited them (no provenance, no fidelity verdicts) the source is
`unaudited`: the report says to run the audit.

A fact told in one repeat and missed in another is evidence only when it goes with the outcome beyond
chance: "flaky simulation" on provenance needs the one-sided Fisher test that the failing repeats missed
the fact more often than the passing ones (Bonferroni over the facts tested, α = 0.05). Otherwise the bot's
own randomness may merely have coincided with a user who volunteered a fact once, and those pairs are
`undetermined`: no evidence either way. (A failed fidelity check is a judged fact about the user, not a
coincidence, and needs no such test. A bot turn that differs after the same history is observed, not
inferred: the transcripts are equal up to it.)
"""

from __future__ import annotations

__all__ = ["Attribution", "Audited", "attribute_variance", "first_divergence"]

from collections import Counter
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Literal

from simulator.models import ResultModel
from simulator.record.models import ConversationRecord
from simulator.stats.evidence import ALPHA, fisher_greater

Source = Literal["bot", "reworded", "simulation", "judge", "unaudited", "undetermined"]
SOURCES: tuple[Source, ...] = ("bot", "reworded", "simulation", "judge", "unaudited", "undetermined")
_MAX_EACH = 20  # repeats compared on each side: enough to see the sources, O(repeats) per scenario


class Attribution(ResultModel):
    """Pairs of (failing, passing) repeats by where they first differed, and the sources that varied."""

    pairs: int
    # Pairs identical up to a bot turn (or to the final state) that differed: the same history, another answer.
    bot: int
    simulation: int
    judge: int
    sources: list[str]
    # Pairs whose user words differed first, with the same facts revealed and fidelity passed: the bot's
    # answer changed after the wording did (not counted in `bot`: the histories were not the same).
    reworded: int = 0
    # Pairs whose user turns differed with nothing to tell why (no provenance, no fidelity verdicts).
    unaudited: int = 0
    # Pairs where the user told a fact in one and not the other, with no association of the fact with the
    # outcome beyond chance (the Fisher test in the module doc): no evidence either way.
    undetermined: int = 0
    fact_p_value: float | None = None  # that test's Bonferroni-adjusted p, when a fact was tested

    @property
    def label(self) -> str:
        """`bot`, `simulation`, `judge`, or several joined by `+`."""
        return "+".join(self.sources)


@dataclass(frozen=True)
class Audited:
    """What the fidelity audit says about a run's conversations: which were audited, which it failed."""

    audited: Set[str] = field(default_factory=frozenset)
    faulted: Set[str] = field(default_factory=frozenset)


def _user_told_more(a: ConversationRecord, b: ConversationRecord) -> bool:
    """A fact `a`'s user volunteered unasked that `b`'s bot never learned: the user changed what the bot knew.
    (Volunteered in one and elicited in the other, the bot learned the same; elicited in one and missed in
    the other, the bot asked only once: neither is the simulation's doing.)"""
    missed = {p.fact for p in b.provenance if p.status == "missed"}
    return any(p.status == "volunteered" and p.fact in missed for p in a.provenance)


def _user_diverged(a: ConversationRecord, b: ConversationRecord, audit: Audited) -> str:
    """A user turn differed first: `simulation` on evidence, `reworded` (the bot's) when audited and the
    same facts came out unasked, `unaudited` when nothing can tell."""
    if a.id in audit.faulted or b.id in audit.faulted:
        return "simulation"
    if a.provenance and b.provenance:
        return "told" if _user_told_more(a, b) or _user_told_more(b, a) else "reworded"
    if a.id in audit.audited and b.id in audit.audited:
        return "reworded"
    return "unaudited"


def _divergence(a: ConversationRecord, b: ConversationRecord, audit: Audited) -> str:
    """`first_divergence`, keeping `reworded` apart from other bot variation."""
    for turn_a, turn_b in zip(a.turns, b.turns, strict=False):
        if turn_a.role != turn_b.role or turn_a.messages != turn_b.messages:
            return _user_diverged(a, b, audit) if turn_a.role == "user" else "bot"
    if len(a.turns) != len(b.turns):
        # One side stopped where the other went on: whoever's turn came next chose differently.
        longer = a.turns if len(a.turns) > len(b.turns) else b.turns
        user = longer[min(len(a.turns), len(b.turns))].role == "user"
        return _user_diverged(a, b, audit) if user else "bot"
    if a.final_state != b.final_state or a.stop_reason != b.stop_reason:
        return "bot"
    return "judge"


def first_divergence(a: ConversationRecord, b: ConversationRecord, audit: Audited | None = None) -> Source:
    """Who varied between two transcripts of the same scenario: `bot` (identical up to a differing bot turn),
    `reworded` (the user's words differed, same facts, audited), `simulation` (on evidence only), `judge`
    (identical transcripts), or `unaudited` (the user's words differed, nothing tells why)."""
    found = _divergence(a, b, audit or Audited())
    return "simulation" if found == "told" else found  # type: ignore[return-value]


def _told(record: ConversationRecord) -> dict[int, bool]:
    """Each fact of the record's provenance: did the bot learn it (volunteered or elicited)?"""
    return {p.fact: p.status != "missed" for p in record.provenance}


def fact_outcome_p(failing: list[ConversationRecord], passing: list[ConversationRecord]) -> float | None:
    """The test behind a provenance-based "flaky simulation": for each fact missed in some failing repeat
    and told in some passing one, the one-sided Fisher p that failing repeats missed it more often than
    passing ones; the smallest, Bonferroni-adjusted over the facts tested. None when no fact qualifies."""
    bad = [_told(r) for r in failing if r.provenance]
    good = [_told(r) for r in passing if r.provenance]
    facts = sorted(
        {f for t in bad for f, told in t.items() if not told}
        & {f for t in good for f, told in t.items() if told}
    )
    if not facts:
        return None
    ps = []
    for fact in facts:
        fail_missed = sum(1 for t in bad if fact in t and not t[fact])
        fail_told = sum(1 for t in bad if t.get(fact))
        pass_missed = sum(1 for t in good if fact in t and not t[fact])
        pass_told = sum(1 for t in good if t.get(fact))
        ps.append(fisher_greater(fail_missed, fail_told, pass_missed, pass_told))
    return min(1.0, min(ps) * len(facts))


def attribute_variance(
    failing: list[ConversationRecord], passing: list[ConversationRecord], audit: Audited | None = None
) -> Attribution:
    """Attribute a flaky scenario's variation from up to 20 failing and 20 passing repeats."""
    counts: Counter[str] = Counter()
    # Each record's turns read once (a report's records may keep them in the run folder: StoredTurns).
    bads, goods = (
        [r.model_copy(update={"turns": list(r.turns)}) for r in side[:_MAX_EACH]]
        for side in (failing, passing)
    )
    for bad in bads:
        for good in goods:
            counts[_divergence(bad, good, audit or Audited())] += 1
    p = fact_outcome_p(bads, goods) if counts["told"] else None
    established = p is not None and p < ALPHA
    simulation = counts["simulation"] + (counts["told"] if established else 0)
    undetermined = 0 if established else counts["told"]
    bot = counts["bot"]
    by_source = {
        "bot": bot,
        "reworded": counts["reworded"],
        "simulation": simulation,
        "judge": counts["judge"],
    }
    by_source["unaudited"] = counts["unaudited"]
    by_source["undetermined"] = undetermined
    return Attribution(
        pairs=sum(counts.values()),
        bot=bot,
        simulation=simulation,
        judge=counts["judge"],
        sources=[s for s in SOURCES if by_source[s]],
        reworded=counts["reworded"],
        unaudited=counts["unaudited"],
        undetermined=undetermined,
        fact_p_value=p,
    )
