"""What a run writes: one ConversationRecord per finished conversation, one Verdict per judgement."""

from __future__ import annotations

__all__ = [
    "SCHEMA_VERSION",
    "ConversationRecord",
    "DecidedOutcome",
    "ErrorInfo",
    "Evidence",
    "FactProvenance",
    "Label",
    "LabelValue",
    "SourceReading",
    "StopReason",
    "Verdict",
    "VerdictResult",
    "conversation_key",
]

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from simulator.config.expected import expected_value_problem
from simulator.config.suite import MAX_RUNS
from simulator.models import StrictModel, empty_dict, empty_list
from simulator.record.transcript import Turn, Usage

# The version of every record: manifest, conversation and verdict lines (migrations in record/migrations.py).
# 3: a turn is an ordered list of parts (text, options, pick, media, tool_call, event; record/parts.py).
SCHEMA_VERSION = 4

StopReason = Literal["user_done", "handover", "bot_closed", "max_turns", "error"]
# `fidelity` verdicts judge the simulated user, not the bot: every bot table leaves them out.
VerdictKind = Literal["llm", "code", "metric", "fidelity"]
FactStatus = Literal["elicited", "volunteered", "missed"]
VerdictResult = Literal["pass", "fail", "not_applicable", "error", "not_judged"]


# A repeat's index: 0 up to the most runs a suite may ask for (config/suite.py MAX_RUNS), exclusive.
Repeat = Annotated[int, Field(ge=0, lt=MAX_RUNS)]


def conversation_key(scenario_id: str, repeat: int) -> str:
    """The stable id of one (scenario, repeat) item; resume, compare and labels all match on it."""
    return f"{scenario_id}#{repeat}"


class ErrorInfo(StrictModel):
    """Why something failed: where (bot, user, judge), the error class and the message."""

    source: Literal["bot", "user", "judge", "engine"]
    kind: str
    message: str


class FactProvenance(StrictModel):
    """When and why the simulated user revealed one of the scenario's facts (or that it never did).

    `elicited`: a bot turn asked for it (`asked_turn`, with the question quoted in `question`);
    `volunteered`: the user said it unasked; `missed`: it never came up. Turn numbers are positions in the
    record's `turns` list. `source` says how it is known: `offline` (the offline user, exact), `llm` (an
    audit whose quotes were verified against the transcript: `verified`) or `code` (word overlap between
    the fact and the user's messages, when there is neither).
    """

    fact: int  # index in the scenario's facts
    text: str
    status: FactStatus
    user_turn: int | None = None
    asked_turn: int | None = None
    question: str | None = None
    quote: str | None = None
    source: Literal["offline", "llm", "code"] = "offline"
    verified: bool | None = None
    # The expected outcome depends on this fact (scenario `key_facts`; see docs/fidelity.md).
    key: bool = False


class ConversationRecord(StrictModel):
    """One finished conversation, as appended to `conversations.jsonl`."""

    schema_version: int = SCHEMA_VERSION
    id: str
    scenario_id: str
    repeat: Repeat
    stop_reason: StopReason
    turns: list[Turn]
    final_state: dict[str, Any] | None = None
    # The environment's state when the conversation ended (a suite with `environment:`; docs/environment.md).
    environment_state: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    # Attempts discarded because the simulated user broke character, with the reason each time.
    character_breaks: list[str] = Field(default_factory=empty_list)
    started_at: datetime
    ended_at: datetime
    usage_by_role: dict[str, Usage] = Field(default_factory=empty_dict)
    tags: list[str] = Field(default_factory=empty_list)
    user_model: str = ""
    bot: str = ""
    # Calls answered from the response cache, by role.
    cache_hits: dict[str, int] = Field(default_factory=empty_dict)
    # The id the bot was given: unique per run and per attempt, so a bot that keeps sessions never answers
    # from another run's state. `id` (scenario#repeat) stays the record's key.
    bot_conversation_id: str | None = None
    # True when some text could not be stored as UTF-8 (a lone surrogate) and was replaced by U+FFFD.
    text_repaired: bool = False
    # Per fact of the scenario: elicited, volunteered or missed (empty when not audited).
    provenance: list[FactProvenance] = Field(default_factory=empty_list)
    # Attempts discarded because the simulated user failed a fidelity check (`user.fidelity.on_fail:
    # regenerate`), with the failed checks each time.
    fidelity_regenerations: list[str] = Field(default_factory=empty_list)


class Evidence(StrictModel):
    quote: str
    found: bool


class SourceReading(StrictModel):
    """What one outcome source read from a conversation: a level, `other` (a value that is not a level, kept
    in `raw`), `no decision` or `error` (the source itself failed: a judge call, a pattern that timed out)."""

    value: str
    raw: Any = None
    quote: str | None = None
    # The bot turn (position in `turns`) the quote comes from, when there is one.
    turn: int | None = None
    # False when a judge's quote was not found in the transcript (its reading then decides nothing).
    verified: bool | None = None
    # `messages`: every level advised, in the order first advised, when more than one (conflicting advice).
    conflicts: list[str] = Field(default_factory=empty_list)
    note: str | None = None


class DecidedOutcome(StrictModel):
    """The outcome of one conversation as judging decided it: the source that decided (None when none did),
    the column it lands in, the deciding quote, and what every configured source read. Every reader of a run
    takes the outcome from here (analysis/outcome.py: actual_outcome)."""

    source: str | None = None
    value: str
    quote: str | None = None
    # The sources in the order configured, each with its reading.
    readings: dict[str, SourceReading] = Field(default_factory=empty_dict)
    # `messages` only: which advice counts (`last` or `most_urgent`).
    counts: str | None = None
    # The patient's red flag (`outcome.red_flags`): the most urgent level their own words call for, with the
    # quote and turn; the floor a conversation without a scenario is held to. None: no red flag configured
    # or none matched.
    red_flag: SourceReading | None = None


class Verdict(StrictModel):
    """One (conversation, check or criterion) judgement, as appended to `verdicts.jsonl`."""

    schema_version: int = SCHEMA_VERSION
    conversation_id: str
    scenario_id: str
    repeat: Repeat
    criterion_id: str
    kind: VerdictKind
    result: VerdictResult
    reasoning: str = ""
    evidence: list[Evidence] = Field(default_factory=empty_list)
    # False when a quote was not found in the transcript, or a pass/fail came with no quote at all.
    evidence_verified: bool | None = None
    score: float | None = None
    severity: str | None = None
    category: str | None = None
    judge_model: str | None = None
    judge_set_hash: str = ""
    usage: Usage | None = None
    latency_s: float | None = None
    error: ErrorInfo | None = None
    judged_at: datetime | None = None
    # Outcome checks: what the scenario expected and what the conversation produced (final-state value or
    # stop reason; None when the bot recorded none).
    expected: Any = None
    actual: Any = None
    # The suite's outcome verdict (`outcome.<key>`): the decided outcome with its source and evidence. None on
    # other verdicts, and on runs judged before it existed (readers fall back to the final state).
    outcome: DecidedOutcome | None = None
    text_repaired: bool = False
    # Several judgements of one item (`--samples k`, a jury of `judges.models`): each judgement is stored
    # with its `sample` index (per judge model) and is never counted by reports; the verdict reports count
    # has `sample` None and names the rule that combined them in `aggregate`, with the `votes` it counted.
    sample: int | None = None
    aggregate: str | None = None
    votes: dict[str, int] | None = None
    # Signed rubric points: the criterion's points and whether the behaviour it describes was present.
    points: int | None = None
    met: bool | None = None
    # How the verdict was decided: a check in `code`, the criterion's `applies_when` rule (no judge call),
    # one `llm` judgement (errors of that call included), or a `jury` of several judgements (`aggregate`
    # names the rule). None: nobody decided (not_judged) or a record written before the field existed.
    decided_by: Literal["code", "applies_when", "llm", "jury"] | None = None

    @field_validator("expected")
    @classmethod
    def _one_expected_value(cls, value: Any, info: ValidationInfo) -> Any:
        """An outcome check's `expected` is the scenario's value (config/expected.py): reports count it."""
        criterion = str(info.data.get("criterion_id", ""))
        if criterion.startswith("outcome."):
            problem = expected_value_problem(criterion.removeprefix("outcome."), value)
            if problem is not None:
                raise PydanticCustomError("expected_value", problem)
        return value

    @property
    def is_sample(self) -> bool:
        """True for one judgement among several (a sample or a jury member), not the verdict that counts."""
        return self.sample is not None


LabelValue = Literal["pass", "fail", "not_applicable"]


class Label(StrictModel):
    """One person's label of one (conversation, criterion), as appended to `labels.jsonl` in the run folder.

    Labels are data about a run, not part of it: the review desk and `simulator labels import` append them,
    several labellers may label the same item, and the latest line per (labeller, conversation, criterion)
    is that labeller's answer. `criterion_id` may name a bot criterion or a simulator-fidelity check.
    """

    schema_version: int = SCHEMA_VERSION
    labeller: str = Field(min_length=1)
    labelled_at: datetime
    conversation_id: str
    criterion_id: str
    label: LabelValue
    note: str | None = None
    # On the outcome criterion of a conversation without a scenario (imported, collected): the level the
    # clinician says it needed, its expected level from then on (record/labelled_levels.py).
    expected_level: str | None = None
