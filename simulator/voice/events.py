"""The voice events of one call, read off its timeline (timeline.py) with the suite's limits:

- **response time**: from the end of a caller utterance to the bot's next speech, when the bot answered
  after the caller finished and before the caller spoke again;
- **cut-off**: the bot started speaking while the caller was still talking (inside an utterance, pauses
  between sentences included) and the two voices overlapped for at least `overlap_s`;
- **talk-over**: the caller started talking while the bot was speaking and the bot went on for at least
  `overlap_s` more (it did not yield to the caller);
- **long silence**: dead air on the bot's side longer than `silence_s`: from the end of a caller utterance
  to the bot's next speech (or the caller's, when the bot never answered), and pauses inside the bot's own
  reply.
"""

from __future__ import annotations

__all__ = ["CallEvents", "call_events"]

from dataclasses import dataclass, field
from itertools import pairwise

from simulator.voice.timeline import CallTimeline, Speech


@dataclass
class CallEvents:
    response_times: list[float] = field(default_factory=list)
    cut_offs: list[tuple[Speech, Speech]] = field(default_factory=list)  # (caller utterance, bot speech)
    talk_overs: list[tuple[Speech, Speech]] = field(default_factory=list)
    silences: list[tuple[float, float]] = field(default_factory=list)  # (from, to) on the call's clock


def _overlap(a: Speech, b: Speech) -> float:
    return min(a.end, b.end) - max(a.start, b.start)


def call_events(timeline: CallTimeline, *, overlap_s: float, silence_s: float) -> CallEvents:
    events = CallEvents()
    bot, caller = timeline.bot, timeline.caller
    for bot_speech in bot:
        for utterance in caller:
            if _overlap(bot_speech, utterance) < max(overlap_s, 1e-9):
                continue
            if utterance.start < bot_speech.start:
                events.cut_offs.append((utterance, bot_speech))
            else:
                events.talk_overs.append((utterance, bot_speech))
            break
    for index, utterance in enumerate(caller):
        next_caller = caller[index + 1].start if index + 1 < len(caller) else None
        started_inside = any(utterance.start < b.start < utterance.end for b in bot)
        answer = next((b.start for b in bot if b.start >= utterance.end), None)
        if answer is not None and next_caller is not None and answer >= next_caller:
            answer = None  # the caller spoke again first: the bot did not answer this utterance
        if answer is not None and not started_inside:
            events.response_times.append(answer - utterance.end)
        gap_end = answer if answer is not None else next_caller
        speaking = any(b.start < utterance.end < b.end for b in bot)  # the bot was already talking
        if gap_end is not None and not speaking and gap_end - utterance.end > silence_s:
            events.silences.append((utterance.end, gap_end))
    for first, second in pairwise(bot):
        gap = second.start - first.end
        inside = first.turn == second.turn and not any(first.end <= c.start < second.start for c in caller)
        if inside and gap > silence_s:
            events.silences.append((first.end, second.start))
    events.silences.sort()
    return events
