"""What only voice gets wrong, over a run: per conversation, then pooled with the vignette (a scenario's
base id) as the unit, as every rate of the report is (docs/voice.md, docs/stats.md).

- response time p50 / p95 over every answered caller utterance (seconds), and the mean of the
  conversations' medians with its vignette-clustered interval;
- the share of calls in which the bot cut the caller off, talked over the caller, or left dead air longer
  than the limit: rates of conversations, scenario-clustered by vignette;
- how well the bot heard the caller: the word error rate of what the bot's own transcript says it heard
  (the final state's `heard_state`) against the words the caller spoke, where the bot exposes it.
"""

from __future__ import annotations

__all__ = ["Quantity", "VoiceFigures", "voice_figures"]

import statistics
from collections import defaultdict
from typing import Any, cast

from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.models import ResultModel
from simulator.record.models import ConversationRecord
from simulator.stats.cluster_tests import clustered_mean
from simulator.stats.rates import RateView, rate_view
from simulator.voice.config import AUDIO, VoiceBotConfig, VoiceLimits
from simulator.voice.events import CallEvents, call_events
from simulator.voice.speech import sentences
from simulator.voice.timeline import Speech, timeline_of
from simulator.voice.wer import word_errors


class Quantity(ResultModel):
    """A mean over conversations with its vignette-clustered 95% interval (None with one vignette)."""

    mean: float | None
    low: float | None = None
    high: float | None = None
    conversations: int = 0
    vignettes: int = 0


class CallRow(ResultModel):
    """One call's voice figures (the report's table and the conversation's link)."""

    conversation: str
    scenario_id: str
    vignette: str
    utterances: int
    response_p50_s: float | None
    response_max_s: float | None
    cut_offs: int
    talk_overs: int
    long_silences: int
    longest_silence_s: float | None
    word_error_rate: float | None
    first_cut_off: str | None = None  # "12.3 s: the bot spoke over '...'"


class VoiceFigures(ResultModel):
    """The run's voice figures, with their units and what they left out."""

    calls: int
    left_out: int  # conversations with no speech on record (errored before the call)
    limits: dict[str, float]
    response_p50_s: float | None
    response_p95_s: float | None
    responses: int
    response_mean_of_medians: Quantity
    cut_off: RateView
    talk_over: RateView
    long_silence: RateView
    word_error_rate: float | None  # pooled: all word edits over all words said
    word_error_mean: Quantity
    heard_calls: int  # calls whose bot exposed its transcript
    rows: list[CallRow]


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _heard(record: ConversationRecord, key: str) -> str | None:
    value: Any = (record.final_state or {}).get(key)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    return None


def _limits(run: RunData) -> tuple[VoiceLimits, str]:
    """The run's voice limits and the final-state entry of what the bot heard (defaults for a run whose
    suite is not a voice one: figures read off imported or older calls)."""
    suite = run.manifest.suite
    bot = suite.bot if suite is not None else None
    if bot is not None and bot.has(AUDIO):
        voice = cast(VoiceBotConfig, bot)
        return voice.limits, voice.heard_state
    return VoiceLimits(), "heard"


def _mean(clusters: dict[str, list[float]]) -> Quantity:
    values = [v for c in clusters.values() for v in c]
    if not values:
        return Quantity(mean=None)
    found = clustered_mean(list(clusters.values()))
    low, high = (found[1], found[2]) if found is not None else (None, None)
    return Quantity(
        mean=statistics.fmean(values), low=low, high=high, conversations=len(values), vignettes=len(clusters)
    )


def _words_after(utterance: Speech, at: float) -> str:
    """The words of `utterance` said from `at` on: whole sentences that had not begun (when the call kept
    their times), and within a sentence the words placed by time (a caller speaks at an even rate)."""
    parts = sentences(utterance.transcript)
    spans = (
        list(utterance.sentences)
        if len(utterance.sentences) == len(parts)
        else [(utterance.start, utterance.end)]
    )
    if len(spans) == 1:
        parts = [utterance.transcript]
    tail: list[str] = []
    for text, (start, end) in zip(parts, spans, strict=True):
        if end <= at:
            continue
        words = text.split()
        share = max(0.0, (at - start) / max(end - start, 1e-9))
        tail += words[min(len(words) - 1, int(share * len(words))) :] if words else []
    shown = " ".join(tail)
    return shown if len(shown) <= 100 else shown[:99] + "…"


def _row(
    record: ConversationRecord, vignette: str, events: CallEvents, utterances: int, wer: float | None
) -> CallRow:
    first = None
    if events.cut_offs:
        utterance, bot = events.cut_offs[0]
        first = f"{bot.start:.1f} s: the bot spoke while the caller was still to say '{_words_after(utterance, bot.start)}'"
    return CallRow(
        conversation=record.id,
        scenario_id=record.scenario_id,
        vignette=vignette,
        utterances=utterances,
        response_p50_s=_quantile(events.response_times, 0.5),
        response_max_s=max(events.response_times, default=None),
        cut_offs=len(events.cut_offs),
        talk_overs=len(events.talk_overs),
        long_silences=len(events.silences),
        longest_silence_s=max((b - a for a, b in events.silences), default=None),
        word_error_rate=wer,
        first_cut_off=first,
    )


def voice_figures(run: RunData) -> VoiceFigures | None:
    """The run's voice figures; None when no conversation of the run was a call."""
    limits, heard_state = _limits(run)
    bases = {entry.id: entry.base or vignette_of(entry.id) for entry in run.manifest.scenarios}
    rows: list[CallRow] = []
    responses: list[float] = []
    medians: dict[str, list[float]] = defaultdict(list)
    wers: dict[str, list[float]] = defaultdict(list)
    hits: dict[str, dict[str, list[int]]] = {name: {} for name in ("cut", "over", "silence")}
    edits = words = left_out = 0
    for record in run.conversations:
        timeline = timeline_of(record)
        if not timeline.is_call:
            left_out += 1
            continue
        vignette = bases.get(record.scenario_id, vignette_of(record.scenario_id))
        events = call_events(timeline, overlap_s=limits.overlap_s, silence_s=limits.silence_s)
        responses += events.response_times
        if events.response_times:
            medians[vignette].append(statistics.median(events.response_times))
        for name, happened in (
            ("cut", events.cut_offs),
            ("over", events.talk_overs),
            ("silence", events.silences),
        ):
            cell = hits[name].setdefault(vignette, [0, 0])
            cell[0] += int(bool(happened))
            cell[1] += 1
        heard = _heard(record, heard_state)
        wer = None
        if heard is not None:
            errors = word_errors(" ".join(s.transcript for s in timeline.caller), heard)
            edits, words = edits + errors.edits, words + errors.words
            wer = errors.rate
            if wer is not None:
                wers[vignette].append(wer)
        rows.append(_row(record, vignette, events, len(timeline.caller), wer))
    if not rows:
        return None

    def view(name: str) -> RateView:
        pairs = [(k, n) for k, n in hits[name].values()]
        return rate_view(sum(k for k, _ in pairs), sum(n for _, n in pairs), per_scenario=pairs)

    return VoiceFigures(
        calls=len(rows),
        left_out=left_out,
        limits={"silence_s": limits.silence_s, "overlap_s": limits.overlap_s},
        response_p50_s=_quantile(responses, 0.5),
        response_p95_s=_quantile(responses, 0.95),
        responses=len(responses),
        response_mean_of_medians=_mean(medians),
        cut_off=view("cut"),
        talk_over=view("over"),
        long_silence=view("silence"),
        word_error_rate=edits / words if words else None,
        word_error_mean=_mean(wers),
        heard_calls=sum(len(v) for v in wers.values()),
        rows=rows,
    )
