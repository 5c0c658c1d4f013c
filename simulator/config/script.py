"""A scripted user's lines: what a golden item sends (its context's user turns, then its message) and no more.

A scenario with a `script` is played by the scripted user instead of a simulated one, so a golden item runs
through the same engine, run folder and report as any conversation.
"""

from __future__ import annotations

__all__ = ["ContextTurn", "ItemKind", "Script"]

from typing import Literal

from pydantic import Field

from simulator.models import StrictModel, empty_list

ItemKind = Literal["exact", "assert"]


class ContextTurn(StrictModel):
    """An earlier turn: user turns are sent to the bot before the item's message; bot turns are notes."""

    role: Literal["user", "bot"]
    text: str


class Script(StrictModel):
    """A golden item as the engine plays it: the intent it belongs to, how its verdict is decided, and the
    user lines to send (context user turns, then `user_message`)."""

    intent: str = Field(min_length=1)
    kind: ItemKind
    user_message: str = Field(min_length=1)
    context: list[ContextTurn] = Field(default_factory=empty_list)

    @property
    def lines(self) -> list[str]:
        """What the scripted user sends, in order."""
        return [turn.text for turn in self.context if turn.role == "user"] + [self.user_message]
