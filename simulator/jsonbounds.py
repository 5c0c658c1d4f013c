"""One bounded JSON reader for every JSON that crosses a door: a bot's answer, a tool call's arguments, a
`state_url` answer, an OTLP JSON export, a Graph API call, the desk's editor.

Python's parser takes JSON nested thousands of levels deep until it hits the interpreter's recursion limit
(a `RecursionError`, a traceback or an HTTP 500), and JSON a few hundred levels deep parses but then breaks
every later step that recurses (validation, redaction, the record writer). So each door parses with
`loads_bounded`, which refuses, with one `JSONRefused` line naming what was read, text that is not JSON,
larger than the door's cap, or nested deeper than `MAX_JSON_DEPTH`; `check_depth` bounds a value that
arrived already parsed (a Python tool's result, a state) by the same rule, without recursion.
`JSONRefused` is a `ValueError`, so callers that already turn bad JSON into a clear error keep doing so.
"""

from __future__ import annotations

__all__ = ["MAX_JSON_DEPTH", "JSONRefused", "check_depth", "loads_bounded"]

import json
from typing import Any

MAX_JSON_DEPTH = (
    64  # levels of objects and arrays; real payloads (messages, tool arguments, states) use a few
)


class JSONRefused(ValueError):
    """JSON refused at a door; the message names what was read and why, in one line."""


def check_depth(value: Any, what: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """JSONRefused when `value` nests objects/arrays deeper than `max_depth`, or contains itself (a cycle is
    infinitely deep, and can never be written as JSON). Level by level, without recursion; a value shared
    within a level is visited once, so shared references cannot make the walk exponential."""
    level: list[Any] = [value] if isinstance(value, (dict, list, tuple)) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            raise JSONRefused(
                f"{what} is nested more than {max_depth} levels deep (or contains itself); flatten it"
            )
        seen: set[int] = set()
        below: list[Any] = []
        for container in level:
            if id(container) in seen:
                continue
            seen.add(id(container))
            items = container.values() if isinstance(container, dict) else container
            below.extend(item for item in items if isinstance(item, (dict, list, tuple)))
        level = below


def loads_bounded(
    text: str | bytes, what: str, *, max_depth: int = MAX_JSON_DEPTH, max_bytes: int | None = None
) -> Any:
    """`text` parsed as JSON, or JSONRefused naming `what`: not UTF-8, not JSON, over `max_bytes`, or
    nested deeper than `max_depth`."""
    if max_bytes is not None and len(text) > max_bytes:
        raise JSONRefused(f"{what} is larger than {max_bytes:,} bytes")
    try:
        value = json.loads(text)
    except UnicodeDecodeError:
        raise JSONRefused(f"{what} is not JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise JSONRefused(f"{what} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise JSONRefused(f"{what} is nested more than {max_depth} levels deep; flatten it") from None
    if (
        text.count(b"[" if isinstance(text, bytes) else "[")
        + text.count(b"{" if isinstance(text, bytes) else "{")
        > max_depth
    ):  # fewer brackets than the bound cannot nest past it: no walk needed
        check_depth(value, what, max_depth)
    return value
