"""The provider-neutral conversation types: usage, turns and the transcript both sides write to."""

from __future__ import annotations

__all__ = ["Role", "Turn", "Usage", "render_transcript"]

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Role = Literal["user", "bot"]


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
