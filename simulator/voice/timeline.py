"""A call's timeline read back from its record: the caller's utterances and the bot's stretches of speech,
each (start, end) on the call's clock, from the turns' audio parts. What only voice gets wrong is read off
this (measures.py); nothing here needs the audio itself.
"""

from __future__ import annotations

__all__ = ["CallTimeline", "Speech", "timeline_of"]

from dataclasses import dataclass, field

from simulator.record.models import ConversationRecord
from simulator.record.parts import AudioPart


@dataclass(frozen=True)
class Speech:
    """One stretch of speech: who, when, what was said, and the turn it is in."""

    side: str  # "caller" or "bot"
    start: float
    end: float
    turn: int
    transcript: str = ""


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
    for turn in record.turns:
        side = "caller" if turn.role == "user" else "bot"
        for part in turn.parts:
            if isinstance(part, AudioPart):
                speech = Speech(side, part.start_s, part.end_s, turn.index, part.transcript)
                (timeline.caller if side == "caller" else timeline.bot).append(speech)
    timeline.caller.sort(key=lambda s: s.start)
    timeline.bot.sort(key=lambda s: s.start)
    return timeline
