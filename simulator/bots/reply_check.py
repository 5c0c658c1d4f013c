"""A bot's reply flags and state, checked strictly: `handed_over: "false"` is not a handover.

`bool("false")` is True, so a bot that wrote its flags as strings would have handed over on every turn, and a
`state` that is a list was silently dropped. Both adapters (HTTP and Python) call `checked_flags` on what the
bot sent: JSON booleans (or nothing) for `handed_over` and `closed`, an object (or nothing) of JSON data for
`state` (a Python bot's set, datetime or object used to end the whole run when the record was written);
anything else is an `invalid_reply` bot error naming the field, recorded and never judged.
"""

from __future__ import annotations

__all__ = [
    "MAX_REPLY_BYTES",
    "checked_flags",
    "checked_size",
    "checked_state",
    "shown",
    "user_code_error",
]

import asyncio
from collections.abc import Mapping
from typing import Any

from simulator.bots.base import BotError
from simulator.jsonbounds import JSONRefused, check_data, check_depth

# The most a bot may send in one turn (after decompression): a reply past it is a bot error, not a run that
# reads gigabytes.
MAX_REPLY_BYTES = 8_000_000


def checked_size(value: Any, where: str, max_bytes: int = MAX_REPLY_BYTES) -> None:
    """A bot error when `value` (what an in-process bot or tool handed back) is deeper, larger or more
    self-referential than a reply over the wire may be: the same caps as an HTTP bot's answer."""
    try:
        check_depth(value, where, max_bytes=max_bytes)
    except JSONRefused as exc:
        field = " (bot.max_reply_bytes)" if "larger than" in str(exc) else ""
        raise BotError("invalid_reply", f"{exc}{field}") from None


def user_code_error(exc: BaseException, doing: str = "") -> str:
    """The line recorded when in-process user code (`doing`: "final_state()", a tool's name) raised
    anything, `SystemExit` and other BaseExceptions included: they end that turn or call, never the run."""
    if isinstance(exc, SystemExit):
        code = shown(exc.code, repr)
        return f"{doing or 'the bot'} called sys.exit({code}), which ends only this conversation"
    if isinstance(exc, asyncio.CancelledError):  # the run's own cancellations never get here (python_bot.py)
        return f"{doing or 'the bot'} raised asyncio.CancelledError itself (nothing cancelled it)"
    found = f"{type(exc).__name__}: {shown(exc, str)}"
    return f"{doing} raised {found}" if doing else found


def shown(value: Any, how: Any = str, limit: int = 500) -> str:
    """`how(value)` (str or repr) of an object from user code, at most `limit` characters; user code's
    `__str__` may itself raise, or run long, and neither may reach the run: then its type is shown."""
    try:
        text = how(value)
    except BaseException:
        return f"<{type(value).__name__} that cannot be shown>"
    if not isinstance(text, str):
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def _flag(name: str, value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    shown = repr(value)[:40]
    raise BotError(
        "invalid_reply",
        f"the bot's '{name}' is {type(value).__name__} {shown}; send true or false (a boolean, not a string "
        "or a number), or leave it out",
    )


def checked_state(value: Any, where: str = "state") -> dict[str, Any] | None:
    """`value` as the bot's state: None, or a mapping with string keys; anything else is a bot error."""
    if value is None:
        return None
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        state = dict(value)
        try:  # recorded as JSON, read by judges as JSON: a set, a datetime or NaN is refused here, by name
            check_data(state, f"the bot's {where}")
        except JSONRefused as exc:
            raise BotError("invalid_reply", str(exc)) from None
        return state
    raise BotError(
        "invalid_reply",
        f"the bot's '{where}' is {type(value).__name__}; send an object of named values "
        '(e.g. {"level": "high"}), or leave it out',
    )


def checked_flags(handed_over: Any, closed: Any, state: Any) -> tuple[bool, bool, dict[str, Any] | None]:
    """The reply's `handed_over`, `closed` and `state`, each of the one type it may have."""
    return _flag("handed_over", handed_over), _flag("closed", closed), checked_state(state)
