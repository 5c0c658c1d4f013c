"""The bot-under-test contract: a fresh session per conversation that answers one user message at a time."""

from __future__ import annotations

__all__ = ["BotError", "BotReply", "BotSession", "Reply", "parts_from_json"]

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args

from pydantic import BaseModel, ValidationError

from simulator.errors import UserError, field_path, pattern_or_message
from simulator.jsonbounds import JSONRefused, check_data, check_depth
from simulator.record.parts import Part, PickPart, TextPart, parts_adapter
from simulator.record.transcript import Usage, repair_text


@dataclass
class Reply:
    """What a Python bot may return from `send`: several messages (or, for a rich bot, `parts`: options,
    media, tool calls; record/parts.py), and whether it handed over or closed."""

    messages: list[str] = field(default_factory=list)
    handed_over: bool = False
    closed: bool = False
    state: dict[str, Any] | None = None
    parts: list[Any] | None = None

    def __post_init__(self) -> None:
        """Checked where it is built, so `Reply(None)` is one UserError line naming the field, not a
        TypeError later in the engine."""
        if isinstance(self.messages, str):
            raise UserError(
                f"simulator.Reply: field 'messages' is a list of strings: Reply([{self.messages!r}])"
            )
        if not isinstance(self.messages, list | tuple) or not all(isinstance(m, str) for m in self.messages):
            raise UserError(
                f"simulator.Reply: field 'messages' must be a list of strings, not {_shown(self.messages)}"
            )
        # The flags and the state are checked where every adapter's are (bots/reply_check.py): a bad one is
        # the bot's `invalid_reply` error naming the field, as it is for an HTTP bot.
        if self.parts is not None and not isinstance(self.parts, list | tuple):
            raise UserError(
                f"simulator.Reply: field 'parts' must be a list of parts, not {_shown(self.parts)}"
            )


def _shown(value: Any) -> str:
    return "None" if value is None else type(value).__name__


@dataclass
class BotReply:
    """A normalised bot turn, whatever the adapter. `parts` holds the whole turn in order; an adapter that
    only has text may give `messages` alone (each becomes a text part)."""

    messages: list[str] = field(default_factory=list)
    handed_over: bool = False
    closed: bool = False
    state: dict[str, Any] | None = None
    latency_s: float = 0.0
    time_to_first_token_s: float | None = None
    usage: Usage | None = None
    model: str | None = None
    raw: dict[str, Any] | None = field(default=None)
    parts: list[Part] | None = None
    # The user's message as the channel delivered it (a voice call: the caller's speech as audio parts);
    # when given it replaces the parts of the user's turn.
    said: list[Part] | None = None

    def turn_parts(self) -> list[Part]:
        """The turn's parts: `parts` when the adapter gave them, else one text part per message."""
        if self.parts is not None:
            return list(self.parts)
        return [TextPart(text=message) for message in self.messages]


class BotError(Exception):
    """The bot failed (raised, timed out, answered garbage); recorded as an error, never a pass or fail.
    `sent`: what the bot had already sent the person in the failing turn (a WhatsApp message before the one
    the Cloud API refused): the transcript keeps it."""

    def __init__(self, kind: str, message: str, *, sent: list[Part] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.sent: list[Part] = list(sent or [])


class BotSession(Protocol):
    async def send(self, text: str, turn: int, *, pick: PickPart | None = None) -> BotReply:
        """Send one user message (with the option the person tapped, if any); return the bot's reply."""
        ...

    async def final_state(self) -> dict[str, Any] | None:
        """The bot's structured final state (e.g. its triage decision), when it has one."""
        ...

    async def aclose(self) -> None: ...


def parts_from_json(value: Any, where: str) -> list[Part]:
    """Parts given as data (an HTTP bot's `parts`, a Python bot's dicts or part objects), validated; a bad
    one is a BotError naming the part and the field."""
    if not isinstance(value, list | tuple):
        raise BotError("invalid_reply", f"{where} must be a list of parts")
    try:
        check_depth(value, where)  # deep or self-containing parts end here, not in a RecursionError
    except JSONRefused as exc:
        raise BotError("invalid_reply", str(exc)) from None
    items = [item.model_dump() if isinstance(item, BaseModel) else item for item in value]
    items = [{"type": "text", "text": item} if isinstance(item, str) else item for item in items]
    items = repair_text(items)  # a lone surrogate is stored as U+FFFD, never refused
    try:
        parts: list[Part] = parts_adapter().validate_python(items)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        # loc is (index, part type, field...) inside a known part type, (index,) for an unknown one.
        where_part = f"{where}, part {int(loc[0]) + 1}" if loc and isinstance(loc[0], int) else where
        if len(loc) > 1:
            where_part += f" ({loc[1]})"
        if len(loc) > 2:
            where_part += ", field " + field_path(loc[2:])
        raise BotError(
            "invalid_reply",
            f"{where_part}: {pattern_or_message(first)} (a part is text, options, media, tool_call, event or audio; "
            "see docs/rich-turns.md)",
        ) from None
    for number, part in enumerate(parts, 1):
        for name in _free_fields(type(part)):
            try:
                check_data(getattr(part, name), f"{where}, part {number} ({part.type}), field {name}")
            except JSONRefused as exc:
                raise BotError("invalid_reply", str(exc)) from None
    return parts


@functools.cache
def _free_fields(kind: type[BaseModel]) -> tuple[str, ...]:
    """The fields of a part that take any data (a tool call's arguments and result): validation keeps what
    was given there, so it is checked as JSON data (an object or a set there used to end the run when the
    record was written)."""
    fields = kind.model_fields.items()
    return tuple(name for name, info in fields if Any in (info.annotation, *get_args(info.annotation)))


def _reply_parts(value: Any) -> list[Part] | None:
    parts = getattr(value, "parts", None)
    return None if parts is None else parts_from_json(parts, "the reply's parts")


def _messages_of(parts: list[Part]) -> list[str]:
    return [part.text for part in parts if isinstance(part, TextPart)]


def normalise_reply(value: Any) -> BotReply:
    """Accept the shapes design.md allows: a string, a list of strings (or of parts), or a Reply."""
    if isinstance(value, str):
        return BotReply(messages=[value])
    if isinstance(value, Reply):
        parts = _reply_parts(value)
        return BotReply(
            messages=_messages_of(parts) if parts is not None else list(value.messages),
            handed_over=value.handed_over,
            closed=value.closed,
            state=value.state,
            parts=parts,
        )
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return BotReply(messages=list(value))
    if isinstance(value, list | tuple):
        parts = parts_from_json(value, "the reply")
        return BotReply(messages=_messages_of(parts), parts=parts)
    messages = getattr(value, "messages", None)
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        parts = _reply_parts(value)
        return BotReply(
            messages=_messages_of(parts) if parts is not None else messages,
            handed_over=bool(getattr(value, "handed_over", False)),
            closed=bool(getattr(value, "closed", False)),
            state=getattr(value, "state", None),
            parts=parts,
        )
    raise BotError(
        "invalid_reply",
        f"send() returned {type(value).__name__}; return str, list[str], a list of parts or Reply",
    )
