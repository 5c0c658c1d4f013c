"""The provider-neutral conversation types: usage, turns and the transcript both sides write to."""

from __future__ import annotations

__all__ = ["TEXT_CHECKED", "Role", "Turn", "Usage", "render_transcript", "repair_text", "turn_lines"]

from datetime import datetime
from typing import Any, Literal

from pydantic import ValidationInfo, model_validator

from simulator.models import StrictModel
from simulator.record.parts import AudioPart, Part, PickPart, TextPart, part_text

Role = Literal["user", "bot"]


def repair_text(value: Any) -> Any:
    """`value` with every lone surrogate (text UTF-8 cannot hold) replaced by U+FFFD, recursively through
    dicts and lists; anything else is returned as it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")  # the common case, checked in C: nothing to repair
            return value
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {repair_text(k): repair_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [repair_text(v) for v in value]
    return value


# Validation context of a record read from JSON text that holds no surrogate escape (`\\uD800`-`\\uDFFF`):
# decoded UTF-8 cannot hold a lone surrogate otherwise, so the turns' text needs no repair pass (which
# walked every part of 10^5 turns). Readers set it only after checking the text (record/folder.py).
TEXT_CHECKED = {"text_checked": True}


def _text_checked(info: ValidationInfo) -> bool:
    context = info.context
    return isinstance(context, dict) and context.get("text_checked") is True


class Usage(StrictModel):
    """Token counts of one or more model calls; cached input is a subset of input."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            calls=self.calls + other.calls,
        )


class Turn(StrictModel):
    """One side's turn: an ordered list of parts (record/parts.py). A user turn is one message (text, a
    pick, or both); a bot turn may hold several messages, options, media, tool calls and events.

    `messages` is the text view every text reader had before parts: the text parts, and a pick's title (a
    person who taps "Yes" has said "Yes"). `Turn(messages=[...])` is still accepted: each becomes a text part.
    """

    index: int
    role: Role
    parts: list[Part]
    started_at: datetime
    latency_s: float = 0.0
    time_to_first_token_s: float | None = None
    usage: Usage | None = None
    model: str | None = None
    # The raw provider or bot exchange (secrets stripped), for debugging; optional.
    raw: dict[str, Any] | None = None
    # True when a message held text UTF-8 cannot store (a lone surrogate), replaced here by U+FFFD.
    text_repaired: bool = False

    @model_validator(mode="before")
    @classmethod
    def _messages_as_parts(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "messages" in data:  # the text-only form (schema 2 records, code that builds turns from strings)
            messages = data.pop("messages")
            if "parts" in data:
                raise ValueError("give a turn `parts` or `messages`, not both")
            if not isinstance(messages, list | tuple):
                raise ValueError("`messages` must be a list of strings")
            data["parts"] = [{"type": "text", "text": m} if isinstance(m, str) else m for m in messages]
        if _text_checked(info):
            return data
        # Text UTF-8 cannot store (a lone surrogate) is repaired before validation: some fields refuse it.
        parts = data.get("parts")
        if isinstance(parts, list) and any(isinstance(p, dict) for p in parts):
            clean = repair_text(parts)
            if clean != parts:
                data["parts"], data["text_repaired"] = clean, True
        return data

    @model_validator(mode="after")
    def _storable_text(self, info: ValidationInfo) -> Turn:
        # Text parts built in code are repaired here, so judges and reports see the text the record keeps.
        if _text_checked(info):
            return self
        for position, part in enumerate(self.parts):
            if isinstance(part, TextPart):
                clean = repair_text(part.text)
                if clean != part.text:
                    self.parts[position] = TextPart(text=clean)
                    self.text_repaired = True
        return self

    @property
    def messages(self) -> list[str]:
        """The turn's text: its text parts, a pick's title and the transcript of speech (a voice call), in
        order (tool calls, options and media are in `parts`; `turn_lines` gives every part as text)."""
        out = []
        for part in self.parts:
            if isinstance(part, TextPart):
                out.append(part.text)
            elif isinstance(part, PickPart):
                out.append(part.title)
            elif isinstance(part, AudioPart) and part.transcript:
                out.append(part.transcript)
        return out

    @property
    def text(self) -> str:
        return "\n".join(self.messages)

    @property
    def is_text_only(self) -> bool:
        return all(isinstance(part, TextPart) for part in self.parts)


def turn_lines(turn: Turn) -> list[str]:
    """Every part of the turn in its one text form (record/parts.part_text), in order."""
    return [part_text(part) for part in turn.parts]


def render_transcript(turns: list[Turn]) -> str:
    """Plain-text transcript, one line per message, labelled by speaker (used by judges and `show`)."""
    lines: list[str] = []
    for turn in turns:
        label = "USER" if turn.role == "user" else "BOT"
        lines.extend(f"[{turn.index}] {label}: {line}" for line in turn_lines(turn))
    return "\n".join(lines)
