"""The scripted user: sends a golden item's lines (its context's user turns, then its message) and ends.

It needs no model and never improvises, so a golden item is a one-turn scenario the main engine runs like
any other: the same runner, run folder, verdicts, resume and report.
"""

from __future__ import annotations

__all__ = ["SCRIPTED", "ScriptedUser"]

from simulator.config.script import Script
from simulator.record.transcript import Turn
from simulator.users.base import END, UserMessage

# The user model name a run records when every scenario is scripted (no simulated user at all).
SCRIPTED = "scripted"


class ScriptedUser:
    """Sends the script's lines one per turn, in order, then the end sentinel."""

    def __init__(self, script: Script) -> None:
        self.lines = script.lines

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        sent = sum(1 for turn in turns if turn.role == "user")
        if sent >= len(self.lines):
            return UserMessage(text=END, done=True, model=SCRIPTED)
        return UserMessage(text=self.lines[sent], model=SCRIPTED)
