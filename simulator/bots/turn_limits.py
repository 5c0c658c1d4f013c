"""One bot turn's limits, the same on every channel: how long a turn may take, and how many bytes, messages
and tool calls it may hold, and how many messages a whole conversation may hold.

The limits are suite settings on `bot:` (config/bot_kinds.py: `max_reply_bytes`, `max_messages_per_turn`,
`max_messages_per_conversation`, `max_tool_calls_per_turn`; each kind's `timeout_s`), read once per run
into a `TurnLimits`. Two places use it, so no channel can be left out:
- the conversation loop (engine/conversation.py) runs every turn of every channel under `guard_turn`: the
  kind's whole-turn deadline plus a short grace (the adapter's own deadline fires first with the better
  hint; this one is the backstop for a path an adapter does not bound) and, when the turn is back, the
  counts and the size of what it holds, environment calls included;
- the adapters and the environment stop *during* a turn where waiting for its end would not be bounded
  (a WhatsApp bot posting without pause, a python bot calling a tool a million times, a reply of 10^6
  parts), with the same limits and the same error.
A turn past a limit is the bot error `over_limit` naming the limit, what was found and the suite field to
raise; it is recorded, never judged, and the run goes on with the next conversation.
"""

from __future__ import annotations

__all__ = [
    "ABANDON_AFTER_S",
    "TurnLimits",
    "guard_turn",
    "over_limit",
]

import json
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from simulator.bots.base import BotError
from simulator.eventloop import within
from simulator.record.parts import Part, ToolCallPart, parts_adapter

if TYPE_CHECKING:
    from simulator.config.bot_kinds import BotConfig

# After the kind's own deadline, how long the loop waits before it stops the turn itself: the adapter's
# deadline, with its more precise hint, fires first.
BACKSTOP_GRACE_S = 5.0
# After a python bot's deadline, how long its cancelled coroutine has to end before it is abandoned (one that
# catches CancelledError and waits again used to hold its conversation, and the run, forever); less than
# BACKSTOP_GRACE_S, so the adapter's error, which says so, comes first.
ABANDON_AFTER_S = 1.0
# Every bot turn of one conversation, as JSON: half of what one record line may hold (record/folder.py
# MAX_RECORD_BYTES), so the run never writes a record its readers refuse.
MAX_CONVERSATION_BYTES = 128_000_000

T = TypeVar("T")


def over_limit(what: str, found: int, field: str, limit: int) -> BotError:
    """The bot error of a turn past one limit: what was found, the limit and the suite field to raise."""
    return BotError(
        "over_limit",
        f"the bot {what} ({found:,}), more than bot.{field} allows ({limit:,}); the turn was stopped there. "
        f"If the bot is meant to, raise bot.{field} in the suite",
    )


@dataclass(frozen=True)
class TurnLimits:
    """The limits of one run's bot turns (defaults: the documented ones, docs/bots.md)."""

    timeout_s: float | None = 30.0  # the kind's whole-turn deadline; None: the kind bounds its own turns
    max_reply_bytes: int = 8_000_000
    max_messages_per_turn: int = 200
    max_messages_per_conversation: int = 5_000
    max_tool_calls_per_turn: int = 100

    @classmethod
    def of(cls, bot: BotConfig) -> TurnLimits:
        return cls(
            timeout_s=bot.turn_deadline_s(),
            max_reply_bytes=bot.max_reply_bytes,
            max_messages_per_turn=bot.max_messages_per_turn,
            max_messages_per_conversation=bot.max_messages_per_conversation,
            max_tool_calls_per_turn=bot.max_tool_calls_per_turn,
        )

    def check_count(self, count: int) -> None:
        """Stop a turn as soon as it holds more messages (or parts) than a turn may: before they are read."""
        if count > self.max_messages_per_turn:
            raise over_limit(
                "sent more messages in one turn", count, "max_messages_per_turn", self.max_messages_per_turn
            )

    def check_calls(self, count: int) -> None:
        if count > self.max_tool_calls_per_turn:
            raise over_limit(
                "made more tool calls in one turn",
                count,
                "max_tool_calls_per_turn",
                self.max_tool_calls_per_turn,
            )

    def check_turn(
        self, parts: Sequence[Part], earlier_messages: int, earlier_bytes: int, dropped_calls: int = 0
    ) -> tuple[int, int]:
        """Every limit of one finished turn (its parts, environment calls included, and the calls the
        environment refused and did not keep), given what the conversation's earlier bot turns held;
        (messages, bytes) of this turn."""
        calls = sum(isinstance(part, ToolCallPart) for part in parts)
        messages = len(parts) - calls
        self.check_count(messages)
        self.check_calls(calls + dropped_calls)
        total = earlier_messages + messages
        if total > self.max_messages_per_conversation:
            raise over_limit(
                "sent more messages in one conversation",
                total,
                "max_messages_per_conversation",
                self.max_messages_per_conversation,
            )
        size = _json_size(parts)
        if size > self.max_reply_bytes:
            raise over_limit("sent more bytes in one turn", size, "max_reply_bytes", self.max_reply_bytes)
        if earlier_bytes + size > MAX_CONVERSATION_BYTES:
            raise BotError(
                "over_limit",
                f"the bot's turns of this conversation hold more than {MAX_CONVERSATION_BYTES:,} bytes, the most "
                "one conversation's record may hold; the turn was stopped there. Lower bot.max_reply_bytes or "
                "the scenario's max_turns",
            )
        return messages, size


def _json_size(parts: Sequence[Part]) -> int:
    """The turn's size as JSON (characters); text UTF-8 cannot hold (a lone surrogate, repaired when the
    record is written) is counted through Python's encoder, which escapes it."""
    if not parts:
        return 0
    adapter = parts_adapter()
    try:
        return len(adapter.dump_json(list(parts)))
    except ValueError:  # pydantic's serializer refuses a lone surrogate
        return len(json.dumps(adapter.dump_python(list(parts), mode="json")))


async def guard_turn(limits: TurnLimits, turn: Awaitable[T]) -> T:
    """`turn` (one bot turn of any channel) under the kind's whole-turn deadline plus the grace: past it,
    the turn is cancelled and is the bot error `timeout` naming `bot.timeout_s`."""
    if limits.timeout_s is None:
        return await turn
    deadline = limits.timeout_s + BACKSTOP_GRACE_S
    try:
        return await within(turn, deadline)
    except TimeoutError:
        raise BotError(
            "timeout",
            f"the bot's turn did not end within {deadline:g} s (bot.timeout_s, {limits.timeout_s:g} s, is the "
            f"whole turn's deadline; {BACKSTOP_GRACE_S:g} s of grace); it was stopped there",
        ) from None
