"""One HTML drawing of a turn's parts, shared by the HTML report and the review desk's reader.

Text is highlighted (the verdicts' evidence) by the caller's function; options are drawn as buttons or a
list, a pick as the tapped button, media as a placeholder card, a tool call as a collapsible card with its
arguments and result, an event as a badge, speech on a voice call as its time and transcript with a player
for its audio (when an `audio_root` URL for the run folder is given and the audio was kept). Everything from the transcript is escaped. Their style sheet is
report/assets/parts.css (inlined in the report, served to the desk).
"""

from __future__ import annotations

__all__ = ["turn_html"]

import json
from collections.abc import Callable
from typing import Any

from simulator.record.parts import (
    AudioPart,
    EventPart,
    MediaPart,
    OptionsPart,
    Part,
    PickPart,
    TextPart,
    ToolCallPart,
    part_text,
)
from simulator.visible import html_text

Highlight = Callable[[str], str]


def _e(value: Any) -> str:
    return html_text(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)


def _options(part: OptionsPart) -> str:
    label = f'<span class="lbl">{_e(part.style.replace("_", " "))}'
    label += f" · {_e(part.button)}</span>" if part.button else "</span>"
    buttons = "".join(
        f'<span class="opt" data-id="{_e(o.id)}" title="id {_e(o.id)}">{_e(o.title)}'
        + (f" <small>{_e(o.description)}</small>" if o.description else "")
        + "</span>"
        for o in part.options
    )
    return f'<div class="opts {_e(part.style)}" role="group">{label}{buttons}</div>'


def _tool(part: ToolCallPart) -> str:
    failed = part.error is not None
    who = "user tool" if part.side == "user" else "tool"
    timing = f" · {part.latency_s * 1000:.0f} ms" if part.latency_s is not None else ""
    outcome = f"<b>error</b><pre>{_e(part.error)}</pre>" if failed else f"<pre>{_e(_json(part.result))}</pre>"
    return (
        f'<details class="tool{" err" if failed else ""}"><summary>{who} <code>{_e(part.name)}</code>'
        f"{' failed' if failed else ''}{_e(timing)}</summary>"
        f"<div>arguments</div><pre>{_e(_json(part.arguments))}</pre><div>result</div>{outcome}</details>"
    )


def _speech(part: AudioPart, highlight: Highlight, audio_root: str | None) -> str:
    when = f'<span class="lbl">spoken {part.start_s:.1f}–{part.end_s:.1f} s</span> '
    player = ""
    if audio_root is not None and part.file:
        player = f' <audio controls preload="none" src="{_e(audio_root + part.file)}"></audio>'
    return f'<span class="speech">{when}{highlight(part.transcript)}{player}</span>'


def part_html(part: Part, highlight: Highlight, audio_root: str | None = None) -> str:
    """One part as HTML; text through `highlight` (which must escape), the rest escaped here. `audio_root`:
    the URL of the run folder, ending in `/`, that a voice call's audio paths are relative to."""
    if isinstance(part, AudioPart):
        return _speech(part, highlight, audio_root)
    if isinstance(part, TextPart):
        return highlight(part.text)
    if isinstance(part, OptionsPart):
        return _options(part)
    if isinstance(part, PickPart):
        bad = "" if part.offered else " bad"
        note = "" if part.offered else " (not offered)"
        return f'<span class="pick{bad}" data-id="{_e(part.id)}">tapped: {highlight(part.title)}{note}</span>'
    if isinstance(part, ToolCallPart):
        return _tool(part)
    if isinstance(part, MediaPart):
        return f'<span class="media">{_e(part_text(part))}</span>'
    if isinstance(part, EventPart):
        return f'<span class="event">{_e(part_text(part))}</span>'
    return _e(part_text(part))


def turn_html(
    role: str,
    parts: list[Part],
    highlight: Highlight,
    latency: str = "",
    label: bool = True,
    audio_root: str | None = None,
) -> list[str]:
    """A turn as message bubbles: each text, pick or stretch of speech its own bubble; options, media, tool
    calls and events join the bubble before them (a button list belongs to the message it answers).
    `label=False` is the report's short form for 10^5 bubbles: class `u` or `b`, the speaker's name drawn by
    its style sheet."""
    who = f'<span class="who">{"USER" if role == "user" else "BOT"}</span>' if label else ""
    kind = f"msg {_e(role)}" if label else ("u" if role == "user" else "b")
    bubbles: list[list[str]] = []
    for part in parts:
        if isinstance(part, TextPart | PickPart | AudioPart) or not bubbles:
            bubbles.append([])
        bubbles[-1].append(part_html(part, highlight, audio_root))
    out = []
    for number, bubble in enumerate(bubbles):
        tail = latency if number == 0 else ""
        out.append(f'<div class="{kind}">{who}{"".join(bubble)}{tail}</div>')
    return out
