"""Building blocks of the HTML report: escaping, interval plots, evidence highlighting, the transcript viewer."""

from __future__ import annotations

__all__ = ["badge", "ci_plot", "e", "highlight", "highlighted_quotes", "rate_cell", "transcript_html"]

import json
from dataclasses import dataclass

from simulator.record.parts import TextPart
from simulator.record.selection import is_fidelity_check
from simulator.report.html_turns import turn_html
from simulator.report.model import Transcript
from simulator.stats.rates import RateView
from simulator.visible import html_text


def e(value: object) -> str:
    """Escape anything for HTML text or a quoted attribute (every transcript string goes through here):
    `simulator.visible.html_text`, control and bidi characters made visible first."""
    return html_text(value)


def badge(result: str, text: str | None = None) -> str:
    return f'<span class="badge b-{e(result)}">{e(text or result.replace("_", " "))}</span>'


_COLOURS = {"fail": "#c62828", "warn": "#b26a00", "ok": "#1a7f37", "error": "#8e24aa"}


def _colour(value: RateView, state: str | None) -> str:
    """Red only for what went wrong: a state when one is given, else red when a failure was seen (a
    failure rate above 0, a pass rate below 100%) and green otherwise: a 0/66 failure rate is good news,
    not a red dot."""
    if state in _COLOURS:
        return _COLOURS[state]
    failed = value.k if value.counts == "failures" else value.n - value.k
    return _COLOURS["fail"] if failed else _COLOURS["ok"]


def ci_plot(value: RateView, width: int = 130, state: str | None = None) -> str:
    """An inline SVG: the whole 0–100% track, the interval as a bar (scenario-clustered when the rate
    pools repeats), the rate as a dot, the zero-failure bound as a dashed line."""
    if value.rate is None:
        return ""
    colour = _colour(value, state)
    low, high = value.interval

    def x(p: float) -> float:
        return round(4 + p * (width - 8), 1)

    parts = [
        f'<svg class="ci" width="{width}" height="14" viewBox="0 0 {width} 14" role="img" '
        f'aria-label="{e(value.text)}"><title>{e(value.text)}</title>',
        f'<line x1="4" y1="7" x2="{width - 4}" y2="7" stroke="#dde3ea" stroke-width="2"/>',
        f'<rect x="{x(low)}" y="3" width="{max(1.0, x(high) - x(low))}" height="8" '
        f'fill="{colour}" fill-opacity="0.25"/>',
        f'<circle cx="{x(value.rate)}" cy="7" r="3.5" fill="{colour}"/>',
    ]
    bound = value.shown_bound
    if bound is not None:
        at = bound if value.counts == "failures" else 1 - bound
        parts.append(
            f'<line x1="{x(at)}" y1="1" x2="{x(at)}" y2="13" stroke="{colour}" stroke-dasharray="2,1"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def rate_cell(value: RateView, plot: bool = True) -> str:
    """A table cell: `k/n rate (interval)`, the scenario-clustered interval first when the rate pools
    repeats (RateView.short), the zero-failure bound when there is one, and the plot."""
    if value.rate is None:
        return f'<td class="rate">{value.k}/{value.n} <span class="note">n/a</span></td>'
    head, _, inner = value.short.partition(" (")
    text = f"{e(head)} <small>({e(inner)}</small>"
    more = f'<div class="more">{e(value.needs_more_runs)}</div>' if value.needs_more_runs else ""
    return (
        f'<td class="rate" title="{e(value.text)}"><div class="rc"><span>{text}</span>'
        f"{ci_plot(value) if plot else ''}</div>{more}</td>"
    )


@dataclass
class _Span:
    start: int
    end: int
    criteria: set[str]
    fail: bool


def highlight(text: str, quotes: list[tuple[str, str, str]]) -> str:
    """Escape `text`, wrapping each passage some verdict quoted in <mark> (quotes: text, criterion, result)."""
    found: list[_Span] = []
    for quote, criterion, result in quotes:
        quote = quote.strip()
        if len(quote) < 3:
            continue
        start = text.find(quote)
        while start >= 0:
            found.append(_Span(start, start + len(quote), {criterion}, result == "fail"))
            start = text.find(quote, start + len(quote))
    if not found:
        return e(text)
    found.sort(key=lambda span: (span.start, span.end))
    merged: list[_Span] = []
    for span in found:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            last.end = max(last.end, span.end)
            last.criteria |= span.criteria
            last.fail = last.fail or span.fail
        else:
            merged.append(span)
    out, position = [], 0
    for span in merged:
        names = "|".join(sorted(span.criteria))
        out.append(e(text[position : span.start]))
        out.append(
            f'<mark class="{"ev-fail" if span.fail else "ev"}" data-criteria="{e(names)}" '
            f'title="evidence for {e(names.replace("|", ", "))}">{e(text[span.start : span.end])}</mark>'
        )
        position = span.end
    out.append(e(text[position:]))
    return "".join(out)


def highlighted_quotes(t: Transcript) -> list[tuple[str, str, str]]:
    """The bot verdicts' quotes to highlight in a transcript. Simulator-fidelity verdicts are listed with
    the others but not highlighted: they often quote a whole user message, and overlapping marks would
    blur which passage a bot criterion's evidence is."""
    return [
        (ev.quote, v.criterion_id, v.result)
        for v in t.verdicts
        if not is_fidelity_check(v)
        for ev in v.evidence
    ]


# Results whose verdicts, with no reasoning or evidence, are drawn as one line per result and kind: of 10^4
# conversations these lines were a third of the page, and say nothing beyond the criterion's name.
_PLAIN = ("pass", "not_applicable")


def transcript_html(index: int, t: Transcript, audio_root: str | None = None) -> str:
    """One conversation of the viewer: turns with highlighted evidence, final state, verdicts; a voice
    call's speech with players for the audio under `audio_root` (the run folder's URL)."""
    quotes = highlighted_quotes(t)
    tags = "|" + "|".join(t.tags) + "|"
    turns = []
    for turn in t.turns:
        latency = ""
        if turn.latency_s is not None:
            latency = f"<i>{turn.latency_s * 1000:.0f} ms</i>"
        parts = turn.parts or [TextPart(text=message) for message in turn.messages]
        turns += turn_html(
            turn.role,
            parts,
            lambda text: highlight(text, quotes),
            latency,
            label=False,
            audio_root=audio_root,
        )
    if not turns:
        turns.append('<p class="note">no messages</p>')
    verdicts = []
    plain: dict[tuple[str, str], list[str]] = {}  # passes with nothing to read: one line per result and kind
    for v in t.verdicts:
        meta = " · ".join(x for x in (v.kind, v.severity, v.category) if x)
        if v.result in _PLAIN and not v.reasoning and not v.evidence and v.evidence_verified is not False:
            plain.setdefault((v.result, meta), []).append(v.criterion_id)
            continue
        evidence = "".join(
            f'<q class="{"" if ev.found else "missing"}">{e(ev.quote)}'
            f"{'' if ev.found else ' — NOT FOUND in the transcript'}</q>"
            for ev in v.evidence
        )
        unverified = " <small>(evidence unverified)</small>" if v.evidence_verified is False else ""
        reason = f'<div class="reason">{e(v.reasoning)}</div>' if v.reasoning else ""
        verdicts.append(
            f'<div class="verdict r-{e(v.result)}" data-criterion="{e(v.criterion_id)}">'
            f'<span class="crit">{e(v.criterion_id)}</span> {badge(v.result)}{unverified} <small>{e(meta)}</small>'
            f"{reason}{evidence}</div>"
        )
    verdicts += [
        f'<div class="verdicts r-{e(result)}">{badge(result)} <small>{e(meta)}</small> {e(", ".join(names))}</div>'
        for (result, meta), names in plain.items()
    ]
    state = json.dumps(t.final_state, ensure_ascii=False) if t.final_state is not None else "none"
    environment = ""
    if t.environment_state is not None:
        environment = (
            '<p>environment state: <span class="state env-state">'
            f"{e(json.dumps(t.environment_state, ensure_ascii=False))}</span></p>"
        )
    error = f"<p><strong>error:</strong> {e(t.error)}</p>" if t.error else ""
    breaks = f"<p>character breaks re-run: {t.character_breaks}</p>" if t.character_breaks else ""
    shown_tags = f'<span class="tags">{e(", ".join(t.tags))}</span>' if t.tags else ""
    tag_keys = f' data-tags="{e(tags)}"' if t.tags else ""  # none: the filter reads a missing one as "|"
    return (
        f'<details class="conv" id="t{index}"{tag_keys} '
        f'data-status="{e(t.status)}"><summary><span class="id">{e(t.id)}'
        f"</span>{badge(t.status)} <small>stop: {e(t.stop_reason)}</small>{shown_tags}</summary>"
        f'<div class="conv-body"><div class="turns">{"".join(turns)}</div><div class="side">'
        f'<p>final state: <span class="state">{e(state)}</span></p>{environment}{error}{breaks}'
        f"{''.join(verdicts) or '<p class=note>no verdicts</p>'}</div></div></details>"
    )
