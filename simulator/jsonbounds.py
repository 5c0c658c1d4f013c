"""One bounded JSON reader for every JSON that crosses a door: a bot's answer, a tool call's arguments, a
`state_url` answer, an OTLP JSON export, a Graph API call, the desk's editor.

Python's parser takes JSON nested thousands of levels deep until it hits the interpreter's recursion limit
(a `RecursionError`, a traceback or an HTTP 500), and JSON a few hundred levels deep parses but then breaks
every later step that recurses (validation, redaction, the record writer). So each door parses with
`loads_bounded`, which refuses, with one `JSONRefused` line naming what was read, text that is not JSON,
larger than the door's cap, or nested deeper than `MAX_JSON_DEPTH`; `check_depth` bounds a value that
arrived already parsed (a Python tool's result, a state) by the same rule, without recursion.
`JSONRefused` is a `ValueError`, so callers that already turn bad JSON into a clear error keep doing so.

Python's parser also takes what is not JSON, or what nothing downstream can hold: NaN and Infinity, 1e999
(read as inf), an integer of 5,000 digits (which raises Python's own ValueError text), a key written twice
(the last silently kept). `DECODER`, the one decoder every door and run-folder reader uses, refuses each as
`Unrepresentable`, one line saying which. `text_depth` is the writer's side: a record's JSON text is
measured before it is written, so nothing is written that a reader would refuse.
"""

from __future__ import annotations

__all__ = [
    "DECODER",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "JSONRefused",
    "Unrepresentable",
    "check_data",
    "check_depth",
    "json_kind",
    "loads_bounded",
    "text_depth",
]

import itertools
import json
import math
import re
from typing import Any

MAX_JSON_DEPTH = (
    64  # levels of objects and arrays; real payloads (messages, tool arguments, states) use a few
)


MAX_INT_DIGITS = 640  # digits of one JSON integer: far past any id, count or nanosecond time


class JSONRefused(ValueError):
    """JSON refused at a door; the message names what was read and why, in one line."""


def check_depth(value: Any, what: str, max_depth: int = MAX_JSON_DEPTH, max_bytes: int | None = None) -> None:
    """JSONRefused when `value` nests objects/arrays deeper than `max_depth`, contains itself (a cycle is
    infinitely deep, and can never be written as JSON), or, with `max_bytes`, would be larger than that as
    JSON (counted while walking: a 10^7-element list stops at the cap, not after it is written). Level by
    level, without recursion; a value shared within a level is visited once, so shared references cannot
    make the walk exponential (its size counts once per level: a lower bound, as the cap needs)."""
    level: list[Any] = [value] if isinstance(value, (dict, list, tuple)) else []
    size = _scalar_size(value) if not level else 0
    if max_bytes is not None and size > max_bytes:
        raise JSONRefused(f"{what} is larger than {max_bytes:,} bytes as JSON; keep it smaller")
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
            if isinstance(container, dict):
                items: Any = container.values()
                size += 2 + sum(len(str(key)) + 4 for key in container)
            else:
                items = container
                size += 2
            for item in items:
                if isinstance(item, (dict, list, tuple)):
                    below.append(item)
                    size += 1
                else:
                    size += _scalar_size(item)
                if max_bytes is not None and size > max_bytes:
                    raise JSONRefused(f"{what} is larger than {max_bytes:,} bytes as JSON; keep it smaller")
        level = below


class Unrepresentable(JSONRefused):
    """A JSON value Python's parser takes but nothing downstream can hold or write back as JSON (NaN, a
    float that overflows, an integer of thousands of digits, a repeated key); the message says which."""


def _no_constant(name: str) -> Any:
    raise Unrepresentable(f"holds {name}, which is not JSON; write null or a number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise Unrepresentable(f"holds the number {text[:20]}, too large for a float; write a smaller one")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:  # Python's own cap (sys.get_int_max_str_digits) raises its own text
        raise Unrepresentable(f"holds a number of {len(text):,} digits; write it as text")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise Unrepresentable(f"repeats the key {json.dumps(key)[:60]} in one object; keep one of them")
    return found


# The one JSON decoder of the doors: Python's, without its extensions (NaN, Infinity, 1e999 read as inf) and
# without silently keeping the last of a repeated key.
DECODER = json.JSONDecoder(
    parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int, object_pairs_hook=_unique_keys
)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def text_depth(text: str) -> int:
    """How deep the JSON `text` nests objects and arrays, without parsing it: the writer's check that a line
    it is about to write is one its readers will take. Strings are cut out first (a `[` inside text does
    not nest); a text with fewer brackets than a depth needs is not scanned at all."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return min(text.count("[") + text.count("{"), MAX_JSON_DEPTH)
    steps = (_STEP[b] for b in _BRACKET.findall(_STRING.sub("", text)))
    return max(itertools.accumulate(steps), default=0)


def _scalar_size(value: Any) -> int:
    return len(value) + 3 if isinstance(value, str | bytes) else 8


def loads_bounded(
    text: str | bytes, what: str, *, max_depth: int = MAX_JSON_DEPTH, max_bytes: int | None = None
) -> Any:
    """`text` parsed as JSON, or JSONRefused naming `what`: not UTF-8, not JSON, over `max_bytes`, or
    nested deeper than `max_depth`."""
    if max_bytes is not None and len(text) > max_bytes:
        raise JSONRefused(f"{what} is larger than {max_bytes:,} bytes")
    try:
        value = DECODER.decode(
            (text.decode("utf-8") if isinstance(text, bytes) else text).removeprefix("\ufeff")
        )
    except UnicodeDecodeError:
        raise JSONRefused(f"{what} is not JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise JSONRefused(f"{what} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise JSONRefused(f"{what} is nested more than {max_depth} levels deep; flatten it") from None
    except Unrepresentable as exc:
        raise JSONRefused(f"{what} {exc}") from None
    brackets = (
        text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    )
    if brackets > max_depth:  # fewer brackets than the bound cannot nest past it: no walk needed
        check_depth(value, what, max_depth)
    return value


_TOO_LARGE_INT = 10**MAX_INT_DIGITS
_ADVICE = "send text, a number, true or false, null, a list or an object"


def _data_problem(value: Any) -> str | None:
    """What keeps the scalar `value` from being JSON data, or None when it is."""
    if value is None or isinstance(value, str | bool):
        return None
    if isinstance(value, int):
        inside = -_TOO_LARGE_INT < value < _TOO_LARGE_INT
        return None if inside else f"a number of more than {MAX_INT_DIGITS} digits; send it as text"
    if isinstance(value, float):
        return (
            None
            if math.isfinite(value)
            else f"the number {value!r}, which is not JSON; send null or a number"
        )
    return f"of type {type(value).__name__}, which cannot be recorded as JSON; {_ADVICE}"


def _step(key: Any) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key)[:40]}]"


def _path(links: dict[int, tuple[int, Any]], container: int | None) -> str:
    """Where the container `container` is, from the walk's links (a container's id -> its parent's id and
    its key there): `.symptoms[2]`; "" for the value itself."""
    steps: list[str] = []
    while container is not None and container in links:
        container, key = links[container]
        steps.append(_step(key))
    return "".join(reversed(steps))


def check_data(value: Any, what: str) -> None:
    """JSONRefused when `value` holds what is not JSON data: a value of another type (a set, bytes, a
    datetime, any object), a float that is not finite, an integer too long for a reader, an object key that
    is not text; the message says where, after `what` (`the bot's state.triage_level is set, ...`). Pydantic
    would write some of them as something else (a set as a list, a datetime as text) and refuse the rest
    when the record is written. Without recursion; each container is visited once, so a cycle or a deep
    nesting ends the walk (refusing those is `check_depth`'s)."""
    links: dict[int, tuple[int, Any]] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, int | None, Any]] = [(value, None, None)]  # (value, its container's id, its key)
    while stack:
        item, parent, key = stack.pop()
        if not isinstance(item, dict | list | tuple):
            problem = _data_problem(item)
            if problem is not None:
                where = "" if parent is None else _path(links, parent) + _step(key)
                raise JSONRefused(f"{what}{where} is {problem}")
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if parent is not None:
            links[id(item)] = (parent, key)
        if isinstance(item, dict):
            for name in item:
                if not isinstance(name, str):
                    where = _path(links, id(item)) if parent is not None else ""
                    raise JSONRefused(
                        f"{what}{where} has the key {_shown_key(name)} ({type(name).__name__}); the keys of "
                        "an object are text"
                    )
            stack.extend((child, id(item), name) for name, child in item.items())
        else:
            stack.extend((child, id(item), index) for index, child in enumerate(item))


def _shown_key(key: Any) -> str:
    try:
        text = repr(key)
    except BaseException:
        return "that cannot be shown"
    return text if len(text) <= 40 else text[:40] + "…"


def json_kind(value: Any) -> str:
    """What a JSON value is, in the words of an error message: an object, a list, text, a number, a
    boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"of type {type(value).__name__}"
