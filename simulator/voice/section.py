"""The "Voice" section of the run report, registered (report/analyses.py): the run's voice figures as data
in the JSON report (`voice`), drawn by the one terminal and the one HTML renderer (headline figures with
their units and intervals, one row per call), and a finding for a bot that cuts callers off or talks over
them; its rates are metrics gates and hazard controls can name (`voice.cut_off`, `voice.talk_over`,
`voice.dead_air`)."""

from __future__ import annotations

__all__ = ["voice_findings"]

from typing import Any

from simulator.plural import plural
from simulator.report.analyses import CORE_FINDINGS, Analysis, register_analysis
from simulator.report.model import Finding, Report
from simulator.report.section import (
    Column,
    Figure,
    Figures,
    Note,
    Section,
    State,
    Table,
    number,
    text,
)
from simulator.stats.rates import RateView
from simulator.voice.measures import Quantity, VoiceFigures, voice_figures

VOICE_NOTE = (
    "Unit: calls (conversations), clustered by vignette (a scenario's base id: caller variants of one "
    "patient are conditions, not new evidence). Response time: from the end of the caller's speech to the "
    "bot's first audio, over answered utterances (the bot cutting in and utterances it never answered left "
    "out). Cut off: the bot started speaking while the caller was still talking (pauses between sentences "
    "included). Talked over: the caller started while the bot spoke and the bot went on. Overlaps under "
    "{overlap:g} s and dead air under {silence:g} s are not counted. Heard: the word error rate of what the "
    "bot's own transcript says it heard against the words the caller spoke (fillers left out), where the "
    "bot exposes it."
)


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"


def _quantity(value: Quantity, unit: str) -> str:
    if value.mean is None:
        return "–"
    shown = f"{value.mean:.2f}{unit}"
    if value.low is not None and value.high is not None:
        shown += f" (95% CI {max(0.0, value.low):.2f}–{value.high:.2f}{unit} over {plural(value.vignettes, 'vignette')})"
    return shown


def _rate_state(rate: RateView) -> State | None:
    return "fail" if rate.k else "ok"


def _figures(figures: VoiceFigures) -> Figures:
    wer = figures.word_error_rate
    return Figures(
        [
            Figure("response time p50", _seconds(figures.response_p50_s),
                   f"p95 {_seconds(figures.response_p95_s)} · {figures.responses} answers"),
            Figure("cut the caller off", figures.cut_off.short, "calls", _rate_state(figures.cut_off),
                   figures.cut_off),
            Figure("talked over the caller", figures.talk_over.short, "calls",
                   _rate_state(figures.talk_over), figures.talk_over),
            Figure("dead air > limit", figures.long_silence.short, "calls",
                   "warn" if figures.long_silence.k else "ok", figures.long_silence),
            Figure("word error rate (heard)", "–" if wer is None else f"{100 * wer:.1f}%",
                   f"{figures.heard_calls} of {plural(figures.calls, 'call')} expose what the bot heard"),
        ]
    )  # fmt: skip


def voice_section(report: Report, everything: bool = False) -> Section:
    """The Voice section; empty (drawn as nothing) when the run made no calls."""
    figures: VoiceFigures | None = report.analysis("voice")
    if figures is None:
        return Section("voice", "Voice")
    anchors = {t.id: i for i, t in enumerate(report.transcripts)}
    table = Table(
        [Column("call"), Column("response p50", numeric=True), Column("cut off", numeric=True),
         Column("talked over", numeric=True), Column("dead air", numeric=True),
         Column("longest", numeric=True), Column("WER heard", numeric=True)],
        title="Calls",
        fold_after=20,
    )  # fmt: skip
    for row in sorted(figures.rows, key=lambda r: (-(r.cut_offs + r.talk_overs), r.conversation)):
        link = f"#t{anchors[row.conversation]}" if row.conversation in anchors else None
        bad = row.cut_offs or row.talk_overs
        table.add(
            text(row.conversation, link=link),
            _seconds(row.response_p50_s),
            number(row.cut_offs, state="fail" if row.cut_offs else None),
            number(row.talk_overs, state="fail" if row.talk_overs else None),
            number(row.long_silences, state="warn" if row.long_silences else None),
            _seconds(row.longest_silence_s),
            "–" if row.word_error_rate is None else f"{100 * row.word_error_rate:.0f}%",
            state="fail" if bad else None,
            details=[row.first_cut_off] if row.first_cut_off else [],
        )
    notes = [
        Note(VOICE_NOTE.format(overlap=figures.limits["overlap_s"], silence=figures.limits["silence_s"])),
        Note(
            f"Response time, mean of the calls' medians: {_quantity(figures.response_mean_of_medians, ' s')}; "
            f"words misheard, mean over calls: {_quantity(figures.word_error_mean, '')}."
        ),
    ]
    if figures.left_out:
        notes.append(
            Note(
                f"{plural(figures.left_out, 'conversation')} made no call (an error before it) and are left out."
            )
        )
    state: State | None = "fail" if figures.cut_off.k or figures.talk_over.k else None
    return Section("voice", "Voice", [_figures(figures), table, *notes], state)


def voice_findings(figures: VoiceFigures | None) -> list[Finding]:
    """A warning when the bot cut callers off or talked over them, naming the first such call."""
    if figures is None:
        return []
    found = []
    for rate, what, count in (
        (figures.cut_off, "cut the caller off", "cut_offs"),
        (figures.talk_over, "talked over the caller", "talk_overs"),
    ):
        if rate.k:
            first = next(r for r in figures.rows if getattr(r, count))
            detail = f"{rate.text}; first: {first.conversation}"
            if count == "cut_offs" and first.first_cut_off:
                detail += f" ({first.first_cut_off})"
            found.append(
                Finding(
                    level="warning",
                    title=f"the bot {what} in {rate.k} of {plural(rate.n, 'call')}",
                    detail=detail,
                )
            )
    return found


def voice_metrics(figures: VoiceFigures) -> dict[str, Any]:
    """The voice rates by name, for gates and hazard controls (calls, clustered by vignette)."""
    return {
        "voice.cut_off": figures.cut_off,
        "voice.talk_over": figures.talk_over,
        "voice.dead_air": figures.long_silence,
    }


register_analysis(
    Analysis(
        name="voice",
        key="voice",
        annotation=VoiceFigures | None,
        order=110,
        build=lambda run, options: voice_figures(run),
        findings=lambda report: voice_findings(report.analysis("voice")),
        findings_order=CORE_FINDINGS + 12,
        draw=voice_section,
        draw_order=135,
        metrics=voice_metrics,
    )
)
