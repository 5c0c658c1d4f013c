"""Agreement between a run's outcome sources: when a suite reads the outcome from two or more sources (the
bot's state and what it told the patient, say), how often they give the same level, and every conversation
where they do not ("state says gp; the bot told the patient: 'Call 999 now.'"). A bot whose record and whose
words differ is a finding in itself. Also the conversations where the bot advised more than one level
(conflicting advice), read from the `messages` source."""

from __future__ import annotations

__all__ = ["OutcomeAgreement", "outcome_agreement"]

from collections import Counter
from itertools import combinations

from simulator.analysis.outcome import ERROR, NO_DECISION, decided_outcome, outcome_source
from simulator.analysis.rundata import RunData
from simulator.models import ResultModel as _Model
from simulator.record.models import DecidedOutcome, SourceReading
from simulator.stats.rates import RateView, rate_view


class SourceDisagreement(_Model):
    """One conversation where two sources decided different outcomes, in words and with both readings."""

    conversation_id: str
    scenario_id: str
    repeat: int
    expected: str | None
    readings: dict[str, str]
    text: str


class SourcePairAgreement(_Model):
    """Two sources on the conversations both decided: k agree of n (clustered by scenario)."""

    first: str
    second: str
    agree: RateView
    # Conversations where exactly one of the two decided (left out of n), and where neither did.
    one_decided: int
    neither_decided: int
    disagreements: list[SourceDisagreement]


class AdviceConflict(_Model):
    """A conversation where the bot advised more than one level, in the order it advised them."""

    conversation_id: str
    scenario_id: str
    levels: list[str]
    counted: str


class OutcomeAgreement(_Model):
    """Agreement of each pair of the run's outcome sources, and conflicting advice."""

    unit: str = (
        "conversations where both sources decided an outcome (a level, or a value that is not one); errored "
        "conversations and those either source left undecided are out of n; intervals clustered by scenario"
    )
    sources: list[str]
    counts: str | None
    # How many conversations ended at each column (a level, other, no decision), expected or not: the mix of
    # outcomes of an imported or collected run, where nothing can be compared with an expectation.
    mix: dict[str, int]
    pairs: list[SourcePairAgreement]
    conflicting: RateView | None
    conflicts: list[AdviceConflict]


def reading_text(source: str, reading: SourceReading) -> str:
    """One source's reading in words, as a reader of a disagreement wants it."""
    value = reading.value if reading.value != "other" else f"{reading.raw!r} (not a level)"
    if source == "messages":
        return f"the bot told the patient {reading.quote!r} ({value})"
    if source == "state":
        return f"state says {value}"
    if source == "tool":
        return f"the tool call says {reading.quote or value} ({value})"
    return f"the judge reads {value}" + (f" from {reading.quote!r}" if reading.quote else "")


def _said(reading: SourceReading) -> tuple[str, object]:
    """What a reading says: its level, or for `other` the value itself (two different non-levels differ)."""
    return reading.value, reading.raw if reading.value == "other" else None


def _decides(reading: SourceReading | None) -> bool:
    return reading is not None and reading.value not in (NO_DECISION, ERROR)


def outcome_agreement(run: RunData) -> OutcomeAgreement | None:
    """Agreement between the run's outcome sources, and the mix of outcomes; None when the outcome is read
    from the bot's state alone (the default)."""
    config = run.outcome
    sources = outcome_source(run)
    if config is None or sources == ["state"]:
        return None
    decided = {r.id: decided_outcome(run, r) for r in run.conversations if r.stop_reason != "error"}
    records = {r.id: r for r in run.conversations}
    pairs = []
    for first, second in combinations(sources, 2):
        cells: dict[str, list[int]] = {}
        one = neither = 0
        disagreements = []
        for cid, outcome in decided.items():
            if outcome is None:
                continue
            a, b = outcome.readings.get(first), outcome.readings.get(second)
            if not (_decides(a) and _decides(b)):
                one += int(_decides(a) or _decides(b))
                neither += int(not (_decides(a) or _decides(b)))
                continue
            assert a is not None and b is not None
            same = _said(a) == _said(b)
            record = records[cid]
            cell = cells.setdefault(record.scenario_id, [0, 0])
            cell[0] += int(same)
            cell[1] += 1
            if not same:
                expected = run.expected.get(record.scenario_id, {}).get(config.key)
                disagreements.append(
                    SourceDisagreement(
                        conversation_id=cid,
                        scenario_id=record.scenario_id,
                        repeat=record.repeat,
                        expected=expected if isinstance(expected, str) else None,
                        readings={first: a.value, second: b.value},
                        text=f"{reading_text(first, a)}; {reading_text(second, b)}",
                    )
                )
        per = [(k, n) for k, n in cells.values()]
        agree = rate_view(
            sum(k for k, _ in per), sum(n for _, n in per), counts="successes", per_scenario=per
        )
        pairs.append(
            SourcePairAgreement(
                first=first,
                second=second,
                agree=agree,
                one_decided=one,
                neither_decided=neither,
                disagreements=disagreements,
            )
        )
    conflicting, conflicts = _conflicts(run, decided)
    counts = next((o.counts for o in decided.values() if o is not None and o.counts), None)
    mix = Counter(o.value for o in decided.values() if o is not None)
    ordered = {c: mix[c] for c in [*config.levels, "other", NO_DECISION, ERROR] if mix[c]}
    return OutcomeAgreement(
        sources=sources, counts=counts, mix=ordered, pairs=pairs, conflicting=conflicting, conflicts=conflicts
    )


def _conflicts(
    run: RunData, decided: dict[str, DecidedOutcome | None]
) -> tuple[RateView | None, list[AdviceConflict]]:
    """Of the conversations the messages source read, those where the bot advised more than one level."""
    cells: dict[str, list[int]] = {}
    conflicts = []
    for record in run.conversations:
        outcome = decided.get(record.id)
        reading = outcome.readings.get("messages") if outcome is not None else None
        if reading is None or reading.value == ERROR:
            continue
        cell = cells.setdefault(record.scenario_id, [0, 0])
        cell[0] += int(bool(reading.conflicts))
        cell[1] += 1
        if reading.conflicts:
            conflicts.append(
                AdviceConflict(
                    conversation_id=record.id,
                    scenario_id=record.scenario_id,
                    levels=list(reading.conflicts),
                    counted=reading.value,
                )
            )
    if not cells:
        return None, []
    per = [(k, n) for k, n in cells.values()]
    rate = rate_view(sum(k for k, _ in per), sum(n for _, n in per), counts="failures", per_scenario=per)
    return rate, conflicts
