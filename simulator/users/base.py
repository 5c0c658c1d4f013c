"""The simulated-user contract shared by the LLM user and the offline rule-based user."""

from __future__ import annotations

__all__ = ["END", "CharacterBreak", "SimulatedUser", "UserMessage"]

from dataclasses import dataclass, field
from typing import Any, Protocol

from simulator.record.parts import Part, PickPart, TextPart
from simulator.record.transcript import Turn, Usage

END = "[END]"


@dataclass
class UserMessage:
    """The user's next message; `done` when it is the sentinel (goal met, or clearly not going to be).

    `pick` is the option the person tapped, when they tapped one; `text` is then what they typed as well,
    or the pick's title when they typed nothing (what a text-only bot receives)."""

    text: str
    done: bool = False
    pick: PickPart | None = None
    usage: Usage | None = None
    latency_s: float = 0.0
    model: str | None = None
    raw: dict[str, Any] | None = field(default=None)

    def parts(self) -> list[Part]:
        """The user turn's parts: the pick, then any text typed beside it; or the text alone."""
        if self.pick is None:
            return [TextPart(text=self.text)]
        parts: list[Part] = [self.pick]
        typed = self.text.strip()
        if typed and typed != self.pick.title:
            parts.append(TextPart(text=self.text))
        return parts


class CharacterBreak(Exception):
    """The simulated user stopped playing the person; the conversation is discarded and re-run."""

    def __init__(self, reason: str, usage: Usage | None = None) -> None:
        super().__init__(reason)
        self.usage = usage  # the breaking call still cost tokens


class SimulatedUser(Protocol):
    async def next_message(self, turns: list[Turn]) -> UserMessage:
        """The user's next message given the conversation so far."""
        ...
