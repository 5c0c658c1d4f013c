"""The simulated-user contract shared by the LLM user and the offline rule-based user."""

from __future__ import annotations

__all__ = ["END", "CharacterBreak", "SimulatedUser", "UserMessage"]

from dataclasses import dataclass, field
from typing import Any, Protocol

from simulator.record.parts import MediaPart, Part, PickPart, TextPart
from simulator.record.transcript import Turn, Usage

END = "[END]"


@dataclass
class UserMessage:
    """The user's next message; `done` when it is the sentinel (goal met, or clearly not going to be).

    `pick` is the option the person tapped, when they tapped one; `text` is then what they typed as well,
    or the pick's title when they typed nothing (what a text-only bot receives). `burst` holds the messages
    when the person sent several before the bot answered (`text` is then all of them, one a line), `media`
    the photos and voice notes they sent with them (a channel that takes parts delivers both)."""

    text: str
    done: bool = False
    pick: PickPart | None = None
    burst: list[str] | None = None
    media: list[MediaPart] = field(default_factory=list)
    usage: Usage | None = None
    latency_s: float = 0.0
    model: str | None = None
    raw: dict[str, Any] | None = field(default=None)

    def parts(self) -> list[Part]:
        """The user turn's parts: the pick, then any text typed beside it (each message of a burst its own
        part), then the media; or the text alone."""
        parts: list[Part] = [] if self.pick is None else [self.pick]
        if self.burst:
            parts += [TextPart(text=message) for message in self.burst]
        elif self.pick is None or (self.text.strip() and self.text != self.pick.title):
            parts.append(TextPart(text=self.text))
        return [*parts, *self.media]


class CharacterBreak(Exception):
    """The simulated user stopped playing the person; the conversation is discarded and re-run."""

    def __init__(self, reason: str, usage: Usage | None = None) -> None:
        super().__init__(reason)
        self.usage = usage  # the breaking call still cost tokens


class SimulatedUser(Protocol):
    async def next_message(self, turns: list[Turn]) -> UserMessage:
        """The user's next message given the conversation so far."""
        ...
