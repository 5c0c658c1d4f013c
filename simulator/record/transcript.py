"""The provider-neutral conversation types: usage, turns and the transcript both sides write to."""

from __future__ import annotations

__all__ = ["Role", "Turn", "Usage", "render_transcript", "repair_text"]

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

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


class Usage(BaseModel):
    """Token counts of one or more model calls; cached input is a subset of input."""

    model_config = ConfigDict(extra="forbid")

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


class Turn(BaseModel):
    """One side's turn: the user sends one message, a bot may send several."""

    model_config = ConfigDict(extra="forbid")

    index: int
    role: Role
    messages: list[str]
    started_at: datetime
    latency_s: float = 0.0
    time_to_first_token_s: float | None = None
    usage: Usage | None = None
    model: str | None = None
    # The raw provider or bot exchange (secrets stripped), for debugging; optional.
    raw: dict[str, Any] | None = None
    # True when a message held text UTF-8 cannot store (a lone surrogate), replaced here by U+FFFD.
    text_repaired: bool = False

    @model_validator(mode="after")
    def _storable_text(self) -> Turn:
        # Repaired on entry, so judges and reports see the same text the record keeps.
        clean = [repair_text(message) for message in self.messages]
        if clean != self.messages:
            self.messages = clean
            self.text_repaired = True
        return self

    @property
    def text(self) -> str:
        return "\n".join(self.messages)


def render_transcript(turns: list[Turn]) -> str:
    """Plain-text transcript, one line per message, labelled by speaker (used by judges and `show`)."""
    lines: list[str] = []
    for turn in turns:
        label = "USER" if turn.role == "user" else "BOT"
        lines.extend(f"[{turn.index}] {label}: {message}" for message in turn.messages)
    return "\n".join(lines)
