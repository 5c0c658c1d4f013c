"""Conversation records built in a test, for what reads or writes one (redaction, the record's lines)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from simulator.record.models import ConversationRecord
from simulator.record.transcript import Turn


def bot_said(messages: list[str], final_state: dict[str, Any] | None = None) -> ConversationRecord:
    """Conversation `s#0`, ended by the user, of one turn in which the bot sent `messages`."""
    now = datetime.now(UTC)
    return ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason="user_done",
        turns=[Turn(index=0, role="bot", messages=messages, started_at=now)],
        final_state=final_state,
        started_at=now,
        ended_at=now,
    )
