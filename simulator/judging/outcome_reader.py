"""Deciding a conversation's outcome from the suite's sources (`outcome.source`): the bot's reported state,
what it told the patient (per-level phrases), a tool call's argument, or an LLM classifier. Each source gives
a reading; the first that decides (a level, or a value that is not one) wins, and every reading is kept so
reports can show where the sources disagree. The result is stored on the outcome verdict (record/models.py:
DecidedOutcome) and every reader of a run takes the outcome from there."""

from __future__ import annotations

__all__ = ["OutcomeReader", "make_outcome_reader", "state_reading"]

import re
from dataclasses import dataclass, field
from typing import Any

from simulator.config.outcome_source import (
    ERROR,
    NO_DECISION,
    OTHER,
    check_phrases,
    undecidable,
)
from simulator.config.patterns import PatternTimeout, UserPattern, compile_pattern
from simulator.config.suite import OutcomeConfig
from simulator.config.vocabulary import Vocabulary
from simulator.errors import UserError
from simulator.judging.outcome_judge import OutcomeJudge
from simulator.record.models import ConversationRecord, DecidedOutcome, SourceReading
from simulator.record.parts import ToolCallPart

# A sentence ends at . ! ? or a line break (the quote kept as evidence is the sentence that advised).
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def state_reading(record: ConversationRecord, key: str, levels: list[str]) -> SourceReading:
    """The bot's reported state: `final_state[key]` (a level, `other` or `no decision`)."""
    state: dict[str, Any] = record.final_state or {}
    value = state.get(key)
    if value is None:
        return SourceReading(value=NO_DECISION)
    quote = f"{key}={value!r}"
    problem = undecidable(value, f"the bot's state.{key}")
    if problem is not None:  # a malformed reply: an error, never `other` (the engine makes it the bot's)
        return SourceReading(value=ERROR, raw=value, quote=quote, note=problem)
    if isinstance(value, str) and value in levels:
        return SourceReading(value=value, quote=quote)
    return SourceReading(value=OTHER, raw=value, quote=quote)


@dataclass
class _Advice:
    turn: int
    level: str
    quote: str


@dataclass
class MessagesRule:
    """Per-level phrase patterns, most urgent level first, and the sentences that advise nothing. Read over
    the bot's messages (what it advised), or over the user's (`role="user"`: the patient's red flags)."""

    levels: list[str]
    patterns: dict[str, list[UserPattern]]
    ignore: list[UserPattern] = field(default_factory=list)
    counts: str = "last"
    role: str = "bot"

    def advice(self, record: ConversationRecord) -> list[_Advice]:
        """Every message of the role that named a level (the most urgent one it names), in order."""
        found = []
        for index, turn in enumerate(record.turns):
            if turn.role != self.role:
                continue
            for message in turn.messages:
                best: _Advice | None = None
                for sentence in (s.strip() for s in _SENTENCE.findall(message)):
                    if not sentence or any(p.search(sentence) for p in self.ignore):
                        continue
                    level = self._level(sentence)
                    if level is not None and (best is None or self._rank(level) > self._rank(best.level)):
                        best = _Advice(index, level, sentence)
                if best is not None:
                    found.append(best)
        return found

    def _rank(self, level: str) -> int:
        return self.levels.index(level)

    def _level(self, sentence: str) -> str | None:
        for level in reversed(self.levels):  # most urgent first: "call 999, not your GP" is an emergency
            if any(p.search(sentence) for p in self.patterns.get(level, [])):
                return level
        return None

    def read(self, record: ConversationRecord) -> SourceReading:
        try:
            advice = self.advice(record)
        except PatternTimeout as exc:
            return SourceReading(value=ERROR, note=str(exc))
        if not advice:
            return SourceReading(value=NO_DECISION, note=f"no {self.role} message matched a level's phrases")
        if self.counts == "last":
            chosen = advice[-1]
        else:
            chosen = max(advice, key=lambda a: (self._rank(a.level), -a.turn))
        advised = list(dict.fromkeys(a.level for a in advice))
        return SourceReading(
            value=chosen.level,
            quote=chosen.quote,
            turn=chosen.turn,
            verified=True,
            conflicts=advised if len(advised) > 1 else [],
        )


def tool_reading(record: ConversationRecord, config: OutcomeConfig) -> SourceReading:
    """The argument of the last matching tool call the bot made (mapped through `tool.values`)."""
    tool = config.tool
    assert tool is not None  # checked when the suite loads
    last: tuple[int, Any] | None = None
    for index, turn in enumerate(record.turns):
        for part in turn.parts:
            if isinstance(part, ToolCallPart) and part.side == "bot" and part.name == tool.name:
                value = tool.value_in(part.arguments)
                if value is not None:
                    last = (index, value)
    if last is None:
        return SourceReading(value=NO_DECISION, note=f"the bot made no {tool.name} call with {tool.call}")
    index, value = last
    quote = f"{tool.call}={value!r}"
    problem = undecidable(value, f"the bot's {tool.name} call's {'.'.join(tool.argument)}")
    if problem is not None:
        return SourceReading(value=ERROR, raw=value, quote=quote, turn=index, note=problem)
    level = tool.values.get(str(value), value) if isinstance(value, str) else None
    if isinstance(level, str) and level in config.levels:
        return SourceReading(value=level, raw=value, quote=quote, turn=index, verified=True)
    return SourceReading(value=OTHER, raw=value, quote=quote, turn=index)


@dataclass
class OutcomeReader:
    """Reads a conversation's outcome from the suite's sources, in order."""

    config: OutcomeConfig
    messages: MessagesRule | None = None
    judge: OutcomeJudge | None = None
    red_flags: MessagesRule | None = None  # over the patient's words: the floor (outcome.red_flags)

    async def decide(self, record: ConversationRecord) -> DecidedOutcome:
        """Every source's reading; the first that decides (a level or `other`) is the outcome. None deciding
        with a source in error is `error` (never a pass or a fail); otherwise `no decision`."""
        readings: dict[str, SourceReading] = {}
        for source in self.config.sources:
            readings[source] = await self._read(source, record)
        deciding = next((s for s, r in readings.items() if r.value not in (NO_DECISION, ERROR)), None)
        if deciding is not None:
            chosen = readings[deciding]
            value, quote = chosen.value, chosen.quote
        else:
            errored = any(r.value == ERROR for r in readings.values())
            value, quote = (ERROR if errored else NO_DECISION), None
        counts = self.messages.counts if self.messages is not None else None
        return DecidedOutcome(
            source=deciding,
            value=value,
            quote=quote,
            readings=readings,
            counts=counts,
            red_flag=self._red_flag(record),
        )

    def _red_flag(self, record: ConversationRecord) -> SourceReading | None:
        """The most urgent level the patient's own words flag, with the quote; None when none is flagged
        (a pattern out of time is an `error` reading, so the floor is never silently missing)."""
        if self.red_flags is None:
            return None
        reading = self.red_flags.read(record)
        return None if reading.value == NO_DECISION else reading.model_copy(update={"conflicts": []})

    async def _read(self, source: str, record: ConversationRecord) -> SourceReading:
        if source == "state":
            return state_reading(record, self.config.key, list(self.config.levels))
        if source == "messages":
            assert self.messages is not None
            return self.messages.read(record)
        if source == "tool":
            return tool_reading(record, self.config)
        if self.judge is None:
            return SourceReading(value=ERROR, note="no judge model for the outcome judge")
        return await self.judge.read(record)


def messages_rule(config: OutcomeConfig, vocabulary: Vocabulary | None, where: str) -> MessagesRule:
    """The phrase rule of the `messages` source: the suite's phrases and ignore patterns, else the
    vocabulary's `outcome_levels` and `outcome_ignore`; a level the suite does not declare, or no phrases at
    all, is a one-line error naming where."""
    given = config.messages.phrases if config.messages is not None else {}
    own = vocabulary.outcome_levels if vocabulary is not None else {}
    phrases, field_name = (given, "outcome.messages.phrases") if given else (own, where)
    levels = list(config.levels)
    problems = check_phrases(phrases, levels, field_name)
    if problems:
        raise UserError("; ".join(problems))
    if not phrases:
        raise UserError(
            "outcome source `messages` has no level phrases: add outcome.messages.phrases to the suite "
            "(level -> list of regular expressions) or outcome_levels to the vocabulary (user.vocabulary)"
        )
    ignore = config.messages.ignore if config.messages is not None else []
    ignore = ignore or (vocabulary.outcome_ignore if vocabulary is not None else [])
    return MessagesRule(
        levels=levels,
        patterns={
            level: [compile_pattern(p, f"{field_name}.{level}") for p in patterns]
            for level, patterns in phrases.items()
        },
        ignore=[compile_pattern(p, "outcome.messages.ignore") for p in ignore],
        counts=config.messages.counts if config.messages is not None else "last",
    )


def make_outcome_reader(
    config: OutcomeConfig,
    vocabulary: Vocabulary | None = None,
    judge: OutcomeJudge | None = None,
    where: str = "outcome_levels",
) -> OutcomeReader:
    """The reader for a suite's outcome config; the messages rule is built (and checked) only when used."""
    rule = messages_rule(config, vocabulary, where) if "messages" in config.sources else None
    # Red flags count only where the outcome is recorded for conversations without a scenario (a suite reading
    # more than the state): the default keeps the verdicts it always wrote.
    vocabulary_file = where.rpartition("outcome_levels")[0]  # "FILE: " when the vocabulary is a file
    flags = (
        None if config.default_source else red_flag_rule(config, vocabulary, f"{vocabulary_file}red_flags")
    )
    return OutcomeReader(config=config, messages=rule, judge=judge, red_flags=flags)


def red_flag_rule(
    config: OutcomeConfig, vocabulary: Vocabulary | None, where: str = "red_flags"
) -> MessagesRule | None:
    """The patient's red flags: the suite's `outcome.red_flags`, else the vocabulary's `red_flags`; None when
    neither gives any. Read over the user's messages, the most urgent level matched anywhere counts."""
    own = vocabulary.red_flags if vocabulary is not None else {}
    phrases, where = (config.red_flags, "outcome.red_flags") if config.red_flags else (own, where)
    if not phrases:
        return None
    problems = check_phrases(phrases, list(config.levels), where)
    if problems:
        raise UserError("; ".join(problems))
    ignore = config.red_flags_ignore or (vocabulary.red_flags_ignore if vocabulary is not None else [])
    return MessagesRule(
        levels=list(config.levels),
        patterns={
            level: [compile_pattern(p, f"{where}.{level}") for p in patterns]
            for level, patterns in phrases.items()
        },
        ignore=[compile_pattern(p, "red_flags_ignore") for p in ignore],
        counts="most_urgent",
        role="user",
    )
