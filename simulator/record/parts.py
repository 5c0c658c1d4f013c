"""The parts of a turn: what one side of a conversation sent, in order, as the record keeps it.

A bot turn is an ordered list of parts: `text`; `options` (buttons, list rows or quick replies offered, each
with an id and a title); `media` (kind, caption, content type, no bytes); `tool_call` (name, arguments,
result or error, timing, and which side made it); `event` (handover, close). A user turn holds `text`, a
`pick` (the option the person chose, by id and title), or both. A text-only turn is one `text` part.

`part_text` gives every part one stable, documented text form (docs/rich-turns.md). The judge prompt, the
evidence check, `show` and the plain transcript all use it, so a quote of a tool call or of a pick is found
where the judge saw it.
"""

from __future__ import annotations

__all__ = [
    "ARGUMENTS_DO_NOT_FIT",
    "NO_SUCH_TOOL",
    "AudioPart",
    "EventPart",
    "MediaPart",
    "Option",
    "OptionsPart",
    "Part",
    "PickPart",
    "TextPart",
    "ToolCallPart",
    "last_options",
    "part_text",
    "parts_adapter",
    "refused_call",
]

import json
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from simulator.models import StrictModel, empty_dict


class TextPart(StrictModel):
    """A message of plain text."""

    type: Literal["text"] = "text"
    text: str


class Option(StrictModel):
    """One choice offered: a reply button, a row of a list, or a quick reply."""

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    description: str | None = None
    # The list section a row belongs to (WhatsApp lists group rows into titled sections).
    section: str | None = None


class OptionsPart(StrictModel):
    """Choices offered to the person. `style` says how they look: reply buttons, a list opened by a button
    labelled `button`, or quick replies. The message body that goes with them is a `text` part before."""

    type: Literal["options"] = "options"
    style: Literal["buttons", "list", "quick_replies"] = "buttons"
    options: list[Option] = Field(min_length=1)
    button: str | None = None


class PickPart(StrictModel):
    """The option a person chose, by id and title. `offered` is False when the simulated user named an
    option the bot had not offered (a fidelity problem: a real person can only tap what is on screen)."""

    type: Literal["pick"] = "pick"
    id: str
    title: str
    offered: bool = True
    # Why a simulated user that knows it (the offline user) tapped it: the facts, numbered from 1, that
    # support it, and the basis (`fact`, `goal`, `negative`: none of the other options applies, `unsure`).
    facts: list[int] | None = None
    basis: Literal["fact", "goal", "negative", "unsure"] | None = None


class MediaPart(StrictModel):
    """An image, audio clip, video, document or sticker: what it is, never its bytes. A user's photo carries
    what it shows in words (`description`), a voice note what it says (`transcript`): what the judge reads,
    since nobody here looks at the bytes."""

    type: Literal["media"] = "media"
    kind: Literal["image", "audio", "video", "document", "sticker"]
    caption: str | None = None
    content_type: str | None = None
    # The channel's own reference (a WhatsApp media id, a URL), when there is one.
    ref: str | None = None
    filename: str | None = None
    description: str | None = None  # what an image or video shows (e.g. "a rash that does not fade")
    transcript: str | None = None  # what an audio clip says


class ToolCallPart(StrictModel):
    """One tool call and what came back: the result, or the error. `side` says who made it: the bot under
    test (looking up a patient, booking) or the simulated user (reading their thermometer)."""

    type: Literal["tool_call"] = "tool_call"
    name: str
    arguments: dict[str, Any] = Field(default_factory=empty_dict)
    id: str | None = None
    result: Any = None
    error: str | None = None
    started_at: datetime | None = None
    latency_s: float | None = None
    side: Literal["bot", "user"] = "bot"


class EventPart(StrictModel):
    """Something the bot did that is not a message: handed the person over to a human, or closed."""

    type: Literal["event"] = "event"
    event: Literal["handover", "close"]
    reason: str | None = None


class AudioPart(StrictModel):
    """A stretch of speech in a voice call (docs/voice.md): when it played, in seconds from the call's
    start; what was said (the caller's words as spoken, or the bot's speech as the local transcriber heard
    it); and where its audio is kept, relative to the run folder (None when audio is not kept)."""

    type: Literal["audio"] = "audio"
    start_s: float = Field(ge=0)
    end_s: float = Field(ge=0)
    transcript: str = ""
    file: str | None = None
    duration_s: float | None = Field(default=None, ge=0)  # the audio file's length


Part = Annotated[
    TextPart | OptionsPart | PickPart | MediaPart | ToolCallPart | EventPart | AudioPart,
    Field(discriminator="type"),
]


@cache
def parts_adapter() -> TypeAdapter[list[Part]]:
    """Validates a list of parts from JSON-like data (an HTTP bot's answer, a Python bot's dicts)."""
    return TypeAdapter(list[Part])


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _option_text(option: Option) -> str:
    return f"{option.title} [id={option.id}]"


def part_text(part: Part) -> str:
    """The one text form of a part (documented in docs/rich-turns.md): a text part is its text; the others
    are a bracketed label and their content, e.g. `[buttons] Yes [id=yes] | No [id=no]`,
    `[picked] Yes [id=yes]`, `[tool call] book {"urgency": "emergency"} -> {"id": "A1"}`, and speech as
    `[spoken 3.2-5.0 s] Does the pain spread to your arm?`."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, OptionsPart):
        label = part.style.replace("_", " ") + (f' "{part.button}"' if part.button else "")
        return f"[{label}] " + " | ".join(_option_text(o) for o in part.options)
    if isinstance(part, PickPart):
        return f"[picked] {part.title} [id={part.id}]" + ("" if part.offered else " (not offered)")
    if isinstance(part, MediaPart):
        kind = " ".join(x for x in (part.kind, part.content_type) if x)
        said = [part.caption] if part.caption else []
        if part.description:
            said.append(f"(shows: {part.description})")
        if part.transcript:
            said.append(f"(says: {part.transcript})")
        return f"[{kind}]" + "".join(f" {x}" for x in said)
    if isinstance(part, ToolCallPart):
        who = "tool call" if part.side == "bot" else "user tool call"
        outcome = f"ERROR: {part.error}" if part.error is not None else _json(part.result)
        return f"[{who}] {part.name} {_json(part.arguments)} -> {outcome}"
    if isinstance(part, AudioPart):
        return f"[spoken {part.start_s:.1f}-{part.end_s:.1f} s] {part.transcript}".rstrip()
    return f"[event] {part.event}" + (f": {part.reason}" if part.reason else "")


def last_options(parts: list[Part]) -> list[Option]:
    """The options of the last `options` part in `parts` (what is on the person's screen now), or none."""
    for part in reversed(parts):
        if isinstance(part, OptionsPart):
            return list(part.options)
    return []


# How the environment words a bot's call it refused (bots/environment.py writes these; `refused_call` reads them).
ARGUMENTS_DO_NOT_FIT = "the arguments do not fit"
NO_SUCH_TOOL = "no tool named"


def refused_call(part: Part) -> bool:
    """Whether `part` is a call of the bot's that the environment refused for its arguments or its name (a
    bot fault: record/faults.py)."""
    return (
        isinstance(part, ToolCallPart)
        and part.side == "bot"
        and part.error is not None
        and part.error.startswith((ARGUMENTS_DO_NOT_FIT, NO_SUCH_TOOL))
    )
