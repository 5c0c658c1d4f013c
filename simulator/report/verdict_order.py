"""The order in which a person reads one conversation's verdicts (`simulator show`, the desk's transcript
reader): what failed first, the verdicts on the bot before the simulated user's own checks (`fidelity.*`,
which say whether the test was fair, not whether the bot was right), and what passed or was skipped
collapsed into one line that says how many."""

from __future__ import annotations

__all__ = ["VerdictGroups", "group_verdicts", "ordered", "tally"]

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from simulator.record.selection import is_fidelity_check

# Read first, in this order: a fail, then an error (neither a pass nor a fail: the judge or the check broke).
ATTENTION = ("fail", "error")
_SEVERITY = {"critical": 0, "major": 1, "minor": 2}
_WORDS = {"pass": "passed", "not_applicable": "not applicable", "not_judged": "not judged"}


class VerdictLike(Protocol):
    """A verdict of the run record or of the report's transcript: what ordering needs."""

    @property
    def criterion_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def result(self) -> str: ...
    @property
    def severity(self) -> str | None: ...
    @property
    def reasoning(self) -> str: ...


V = TypeVar("V", bound=VerdictLike)


def _key(verdict: VerdictLike) -> tuple[int, int, str]:
    attention = ATTENTION.index(verdict.result) if verdict.result in ATTENTION else len(ATTENTION)
    return (attention, _SEVERITY.get(verdict.severity or "", 3), verdict.criterion_id)


@dataclass
class VerdictGroups(Generic[V]):
    """One conversation's verdicts in reading order; `attention` lists are expanded, `rest` collapsed."""

    bot_attention: list[V] = field(default_factory=list)
    bot_rest: list[V] = field(default_factory=list)
    simulator_attention: list[V] = field(default_factory=list)
    simulator_rest: list[V] = field(default_factory=list)


def ordered(verdicts: Sequence[V]) -> list[V]:
    """Fails first, then errors, then the rest; critical before major before minor; then by id."""
    return sorted(verdicts, key=_key)


def group_verdicts(verdicts: Sequence[V]) -> VerdictGroups[V]:
    """Split into the bot's and the simulated user's verdicts, each into what needs reading and the rest."""
    groups: VerdictGroups[V] = VerdictGroups()
    for verdict in ordered(verdicts):
        simulator = is_fidelity_check(verdict)  # the simulated user's own checks: about the test
        needs = verdict.result in ATTENTION
        if simulator:
            (groups.simulator_attention if needs else groups.simulator_rest).append(verdict)
        else:
            (groups.bot_attention if needs else groups.bot_rest).append(verdict)
    return groups


def tally(verdicts: Sequence[VerdictLike]) -> str:
    """`6 passed, 7 not judged (no judge model configured …)`: counts by result, in a fixed order; a reason
    shared by every skipped verdict of a result is said once, beside its count."""
    counts = Counter(v.result for v in verdicts)
    parts = []
    for result in ("pass", "not_applicable", "not_judged", *ATTENTION):
        if not counts[result]:
            continue
        word = _WORDS.get(result, result)
        reasons = {v.reasoning.strip() for v in verdicts if v.result == result}
        why = (
            f" ({reasons.pop()})"
            if result == "not_judged" and len(reasons) == 1 and "" not in reasons
            else ""
        )
        parts.append(f"{counts[result]} {word}{why}")
    return ", ".join(parts)
