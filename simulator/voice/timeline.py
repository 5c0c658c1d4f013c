"""A call's timeline read back from its record: the caller's utterances and the bot's stretches of speech,
each (start, end) on the call's clock, from the turns' audio parts. What only voice gets wrong is read off
this (measures.py); nothing here needs the audio itself.
"""

from __future__ import annotations

__all__ = ["CallTimeline", "Speech", "timeline_of"]

from dataclasses import dataclass, field

from simulator.record.models import ConversationRecord
from simulator.record.parts import AudioPart
from simulator.record.stored_turns import StoredTurns


@dataclass(frozen=True)
class Speech:
    """One stretch of speech: who, when, what was said, and the turn it is in."""

    side: str  # "caller" or "bot"
    start: float
    end: float
    turn: int
    transcript: str = ""
    # The caller's sentences' (start, end), when the call recorded them (the bot turn's raw `caller`).
    sentences: tuple[tuple[float, float], ...] = ()


@dataclass
class CallTimeline:
    caller: list[Speech] = field(default_factory=list)
    bot: list[Speech] = field(default_factory=list)

    @property
    def is_call(self) -> bool:
        return bool(self.caller or self.bot)


def timeline_of(record: ConversationRecord) -> CallTimeline:
    """The caller's and the bot's speech in a recorded conversation, in time order (empty: not a call)."""
    timeline = CallTimeline()
    if isinstance(record.turns, StoredTurns) and not any(fact.has_audio for fact in record.turns.facts):
        return timeline  # known at load: no speech, so the line need not be read again
    for position, turn in enumerate(record.turns):
        side = "caller" if turn.role == "user" else "bot"
        sentences = _sentences(record, position) if side == "caller" else ()
        for part in turn.parts:
            if isinstance(part, AudioPart):
                speech = Speech(side, part.start_s, part.end_s, turn.index, part.transcript, sentences)
                (timeline.caller if side == "caller" else timeline.bot).append(speech)
    timeline.caller.sort(key=lambda s: s.start)
    timeline.bot.sort(key=lambda s: s.start)
    return timeline


def _sentences(record: ConversationRecord, position: int) -> tuple[tuple[float, float], ...]:
    """The caller's sentence times of the user turn at `position`, kept in the next (bot) turn's raw."""
    following = record.turns[position + 1] if position + 1 < len(record.turns) else None
    caller = (following.raw or {}).get("caller") if following is not None else None
    spans = caller.get("sentences") if isinstance(caller, dict) else None
    if not isinstance(spans, list):
        return ()
    return tuple(
        (float(a), float(b)) for a, b in spans if isinstance(a, int | float) and isinstance(b, int | float)
    )
