"""The bot-under-test contract: a fresh session per conversation that answers one user message at a time."""

from __future__ import annotations

__all__ = ["BotError", "BotReply", "BotSession", "Reply"]

from dataclasses import dataclass, field
from typing import Any, Protocol

from simulator.record.transcript import Usage


@dataclass
class Reply:
    """What a Python bot may return from `send`: several messages, and whether it handed over or closed."""

    messages: list[str]
    handed_over: bool = False
    closed: bool = False
    state: dict[str, Any] | None = None


@dataclass
class BotReply:
    """A normalised bot turn, whatever the adapter."""

    messages: list[str]
    handed_over: bool = False
    closed: bool = False
    state: dict[str, Any] | None = None
    latency_s: float = 0.0
    time_to_first_token_s: float | None = None
    usage: Usage | None = None
    model: str | None = None
    raw: dict[str, Any] | None = field(default=None)


class BotError(Exception):
    """The bot failed (raised, timed out, answered garbage); recorded as an error, never a pass or fail."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class BotSession(Protocol):
    async def send(self, text: str, turn: int) -> BotReply:
        """Send one user message; return the bot's reply."""
        ...

    async def final_state(self) -> dict[str, Any] | None:
        """The bot's structured final state (e.g. its triage decision), when it has one."""
        ...

    async def aclose(self) -> None: ...


def normalise_reply(value: Any) -> BotReply:
    """Accept the shapes design.md allows: a string, a list of strings, or a Reply."""
    if isinstance(value, str):
        return BotReply(messages=[value])
    if isinstance(value, Reply):
        return BotReply(
            messages=list(value.messages),
            handed_over=value.handed_over,
            closed=value.closed,
            state=value.state,
        )
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return BotReply(messages=list(value))
    messages = getattr(value, "messages", None)
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return BotReply(
            messages=messages,
            handed_over=bool(getattr(value, "handed_over", False)),
            closed=bool(getattr(value, "closed", False)),
            state=getattr(value, "state", None),
        )
    raise BotError("invalid_reply", f"send() returned {type(value).__name__}; return str, list[str] or Reply")
