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

from simulator.errors import decode_error_in_words

MAX_JSON_DEPTH = (
    64  # levels of objects and arrays; real payloads (messages, tool arguments, states) use a few
)


MAX_INT_DIGITS = 640  # digits of one JSON integer: far past any id, count or nanosecond time


class JSONRefused(ValueError):
    """JSON refused at a door; the message names what was read and why, in one line."""


def check_depth(value: Any, what: str, max_depth: int = MAX_JSON_DEPTH, max_bytes: int | None = None) -> None:
    """JSONRefused when `value` nests objects/arrays deeper than `max_depth`, contains itself (a cycle is
    infinitely deep, and can never be written as JSON), or, with `max_bytes`, would be larger than that as
    JSON. The size counts every reference: a list holding the same big list 1,000 times is written 1,000
    times (the "billion laughs" of YAML aliases or a bot's shared lists), so a shared value's size and
    height are worked out once and added at each place it appears, and the walk is linear in the distinct
    containers. Counted while walking, it stops as soon as the cap is passed (a 10^7-element list stops at
    the cap, not after it is written); without recursion."""
    if not isinstance(value, (dict, list, tuple)):
        if max_bytes is not None and _scalar_size(value) > max_bytes:
            raise JSONRefused(f"{what} is larger than {max_bytes:,} bytes as JSON; keep it smaller")
        return
    _JSONWalk(what, max_depth, max_bytes).measure(value)


class _JSONWalk:
    """`check_depth`'s walk: depth first, each container once, its (size as JSON, height) memoised by id;
    the containers still being walked are the path, so meeting one of them again is a cycle."""

    def __init__(self, what: str, max_depth: int, max_bytes: int | None) -> None:
        self.what, self.max_depth = what, max_depth
        self.cap = math.inf if max_bytes is None else max_bytes
        self.done: dict[int, tuple[int, int]] = {}  # id -> (size as JSON, levels it nests)
        self.path: list[list[Any]] = []  # [container, its items' iterator, size so far, height so far]
        self.on_path: set[int] = set()

    def measure(self, value: Any) -> None:
        self._enter(value)
        cap, done = self.cap, self.done
        while self.path:
            frame = self.path[-1]
            size = frame[2]  # kept in a local while the items are scalars: a 10^7-item list is walked
            for item in frame[1]:
                if isinstance(item, (dict, list, tuple)):
                    frame[2] = size
                    known = done.get(id(item))
                    if known is None:
                        self._enter(item)
                        break
                    self._add(frame, 1 + known[0], known[1])
                    size = frame[2]
                else:
                    size += _scalar_size(item)
                    if size > cap:
                        self._too_large()
            else:
                frame[2] = size
                self.path.pop()
                self.on_path.discard(id(frame[0]))
                done[id(frame[0])] = (size, frame[3] + 1)
                if self.path:
                    self._add(self.path[-1], 1 + size, frame[3] + 1)

    def _enter(self, container: Any) -> None:
        if len(self.path) >= self.max_depth or id(container) in self.on_path:
            self._too_deep()
        if isinstance(container, dict):
            frame = [container, iter(container.values()), 2 + sum(len(str(k)) + 4 for k in container), 0]
        else:
            frame = [container, iter(container), 2, 0]
        self.path.append(frame)
        self.on_path.add(id(container))
        self._add(frame, 0, 0)

    def _add(self, frame: list[Any], size: int, height: int) -> None:
        """An item's size and height added to its container's; refused past either bound."""
        frame[2] += size
        frame[3] = max(frame[3], height)
        if len(self.path) + frame[3] > self.max_depth:  # a shared value met again, deeper this time
            self._too_deep()
        if frame[2] > self.cap:
            self._too_large()

    def _too_large(self) -> None:
        raise JSONRefused(f"{self.what} is larger than {self.cap:,} bytes as JSON; keep it smaller")

    def _too_deep(self) -> None:
        raise JSONRefused(
            f"{self.what} is nested more than {self.max_depth} levels deep (or contains itself); flatten it"
        )


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
        words = decode_error_in_words(exc)
        raise JSONRefused(f"{what} is not JSON ({words}; line {exc.lineno}, column {exc.colno})") from None
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
