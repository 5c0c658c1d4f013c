"""Which recorded errors are the bot's own fault: a finding about the bot, not a failure of the test.

A conversation that ended in an error is kept out of every clinical rate (it cannot say what the bot would
have advised). Some of those errors are nonetheless the bot's doing, and a team must hear about them: a
message the WhatsApp Cloud API refuses (four reply buttons where it allows three), a malformed reply, a tool
called with arguments that do not fit its parameters or a tool that does not exist. This module names them,
once, for every reader: the report's bot-faults section counts them per scenario (analysis/bot_faults.py).
A dropped connection, a timeout or a start-up failure is not here: those are the test bench's, or unknown.
"""

from __future__ import annotations

__all__ = ["BOT_FAULTS", "bot_faults"]

from dataclasses import dataclass

from simulator.record.models import ConversationRecord
from simulator.record.parts import part_text, refused_call
from simulator.record.stored_turns import StoredTurns

# A conversation's error kind (`ErrorInfo.kind`, source `bot`) that is the bot's fault -> what it did.
BOT_FAULTS: dict[str, str] = {
    "cloud_api_rule": "broke a WhatsApp Cloud API rule",
    "invalid_reply": "sent a malformed reply",
    "over_limit": "went past a limit of a bot turn (messages, bytes or tool calls)",
    "tool_arguments": "called a tool with invalid arguments",
}


@dataclass(frozen=True)
class BotFault:
    """One fault of the bot in one conversation: its kind (a key of BOT_FAULTS) and what shows it."""

    kind: str
    detail: str


def bot_faults(record: ConversationRecord) -> list[BotFault]:
    """The bot's faults in one conversation: its ending error when that is the bot's, and each of its tool
    calls the environment refused for their arguments or name (the conversation went on after those)."""
    faults = []
    error = record.error
    if error is not None and error.source == "bot" and error.kind in BOT_FAULTS:
        faults.append(BotFault(error.kind, error.message))
    turns = record.turns
    if isinstance(turns, StoredTurns) and not any(fact.refused_call for fact in turns.facts):
        return faults  # known at load: no refused call, so the line need not be read again
    for turn in turns:
        for part in turn.parts:
            if refused_call(part):
                faults.append(BotFault("tool_arguments", part_text(part)))
    return faults
