"""OTLP JSON documents (a file's, or an export request's, JSON or decoded protobuf) into spans, checked at
the door.

One decoder for `simulator import` and `simulator collect`. The containers (`resourceSpans`, `scopeSpans`,
`spans`, their log counterparts) must be lists of objects, else the whole document is refused
(`ShapeError`, naming the line). Inside, each span and log record is checked field by field and, when
malformed, rejected on its own with a reason that names the field (`Decoded.rejected`), so one bad span
never costs the others, and nothing malformed reaches the code after the door: attribute keys are strings,
times are nanoseconds in 0..2^64-1, integers fit in 64 bits, values nest at most `MAX_DEPTH` deep, ids are
strings; a non-finite double becomes its proto3 JSON text ("NaN", "Infinity"), so what is kept is JSON.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "Decoded", "ShapeError", "Span", "any_value", "attributes", "decode_documents"]

import base64
import binascii
import math
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 32  # AnyValue nesting (arrays and key/value lists); GenAI messages need a handful
MAX_NANOS = 2**64 - 1  # OTLP times are fixed64 nanoseconds
INT64 = (-(2**63), 2**63 - 1)
TRACE_ID_BYTES, SPAN_ID_BYTES = 16, 8
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
LACKING = {  # why an id-less span or log record is rejected, by what it is
    "span": "a span needs its {size}-byte id",
    "log record": "a log record needs its span's {size}-byte id to be placed in its conversation",
}


@dataclass
class Span:
    trace_id: str
    span_id: str
    start: int
    end: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    line: int | None
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None  # the status message when the span's status is ERROR
    scope: tuple[str, str] = ("", "")  # the instrumentation scope's name and version

    @property
    def ref(self) -> tuple[str, str]:
        """A span id is unique within its trace only."""
        return self.trace_id, self.span_id


class Malformed(ValueError):
    """A field of one span or log record that is not what OTLP allows; the message names the field."""


class ShapeError(ValueError):
    """An OTLP document of the wrong shape (a list where an object belongs, ...), with its line."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class Decoded:
    """What the documents held: spans by (trace id, span id) with their log records attached as events,
    and what was rejected (one reason each)."""

    spans: dict[tuple[str, str], Span] = field(default_factory=dict)
    span_records: int = 0
    log_records: int = 0
    rejected_spans: list[tuple[int | None, str]] = field(default_factory=list)  # (line, reason)
    rejected_logs: list[tuple[int | None, str]] = field(default_factory=list)

    @property
    def rejected(self) -> list[tuple[int | None, str]]:
        return self.rejected_spans + self.rejected_logs


# ------------------------------------------------------------------------------------------- values


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    return {"str": "text", "list": "a list", "dict": "an object"}.get(
        type(value).__name__, type(value).__name__
    )


def _int(value: Any, what: str, low: int, high: int) -> int:
    """An integer field (a number or its decimal text, as OTLP JSON writes 64-bit integers) within bounds."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise Malformed(f"{what} must be an integer, not {_kind(value)}")
    if isinstance(value, str):
        text = value.strip()
        if not text.lstrip("-").isdigit() or len(text) > 21:
            raise Malformed(f"{what} must be an integer, not the text {value[:24]!r}")
        value = int(text)
    if not low <= value <= high:
        raise Malformed(f"{what} is {value}: out of range ({low}..{high})")
    return value


def nanos(value: Any, what: str) -> int:
    """A time in Unix nanoseconds (missing: 0)."""
    return 0 if value is None else _int(value, what, 0, MAX_NANOS)


def any_value(value: Any, what: str = "value", depth: int = 0) -> Any:
    """An OTLP JSON AnyValue as a Python value; Malformed when it is not one."""
    if depth > MAX_DEPTH:
        raise Malformed(f"{what} is nested more than {MAX_DEPTH} levels deep")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise Malformed(f"{what} must be an AnyValue object, not {_kind(value)}")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise Malformed(f"{what}.stringValue must be text, not {_kind(text)}")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise Malformed(f"{what}.boolValue must be true or false, not {_kind(flag)}")
        return flag
    if "intValue" in value:
        return _int(value["intValue"], f"{what}.intValue", *INT64)
    if "doubleValue" in value:
        return _double(value["doubleValue"], f"{what}.doubleValue")
    if "arrayValue" in value:
        items = _container(value["arrayValue"], f"{what}.arrayValue")
        return [any_value(v, f"{what}.arrayValue[{i}]", depth + 1) for i, v in enumerate(items)]
    if "kvlistValue" in value:
        return attributes(_container(value["kvlistValue"], f"{what}.kvlistValue"), what, depth + 1)
    if "bytesValue" in value:
        data = value["bytesValue"]
        if not isinstance(data, str):
            raise Malformed(f"{what}.bytesValue must be base64 text, not {_kind(data)}")
        return data
    return None  # an empty AnyValue


def _double(value: Any, what: str) -> float | str:
    """A double; a non-finite one as its proto3 JSON text, so what is kept stays JSON."""
    if isinstance(value, str) and value in NON_FINITE:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"{what} must be a number, not {_kind(value)}")
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    return number


def _container(value: Any, what: str) -> list[Any]:
    """`{"values": [...]}` of an arrayValue or kvlistValue."""
    if not isinstance(value, dict):
        raise Malformed(f"{what} must be an object with values, not {_kind(value)}")
    items = value.get("values", [])
    if items is None:
        return []
    if not isinstance(items, list):
        raise Malformed(f"{what}.values must be a list, not {_kind(items)}")
    return items


def attributes(items: Any, what: str = "attributes", depth: int = 0) -> dict[str, Any]:
    """An OTLP JSON key/value list as a dict; Malformed when it is not one (a key that is not text, ...)."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise Malformed(f"{what} must be a list of {{key, value}}, not {_kind(items)}")
    out: dict[str, Any] = {}
    for number, kv in enumerate(items):
        if not isinstance(kv, dict) or "key" not in kv:
            raise Malformed(f"{what}[{number}] must be an object with a key, not {_kind(kv)}")
        key = kv["key"]
        if not isinstance(key, str):
            raise Malformed(f"{what}[{number}].key must be text, not {_kind(key)}")
        out[key] = any_value(kv.get("value"), f"{what}[{number}] ({key[:60]})", depth)
    return out


def hex_id(value: Any, what: str, size: int | None = None, holder: str = "span") -> str:
    """Trace and span ids: hex in OTLP JSON, base64 in protobuf's generic JSON mapping; both accepted. With
    `size`, the id must be usable (`checked_id`)."""
    if value is None or value == "":
        return "" if size is None else checked_id("", what, size, holder)
    if not isinstance(value, str):
        raise Malformed(f"{what} must be text (hex), not {_kind(value)}")
    if len(value) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in value):
        found = value.lower()  # base64 of 8 or 16 bytes ends in "=": never all hex digits
    else:
        try:
            found = base64.b64decode(value, validate=True).hex()
        except (binascii.Error, ValueError):
            if size is not None:
                raise Malformed(f"{what} {value[:40]!r} is neither hex nor base64") from None
            return value[:64]
    return found if size is None else checked_id(found, what, size, holder)


def checked_id(found: str, what: str, size: int, holder: str = "span") -> str:
    """An id in hex when it is usable: there, `size` bytes (16 a trace id, 8 a span id), not all zeros (OTLP's
    invalid id). A span without one cannot be told from another, and a log record without its span's ids
    cannot be placed in a conversation: either is rejected (Malformed), never pooled with the others under
    the empty id and taken as their duplicate."""
    if not found:
        raise Malformed(f"{what} is missing or empty: {LACKING[holder].format(size=size)}")
    if len(found) != 2 * size:
        raise Malformed(f"{what} is {len(found) // 2} bytes long; it must be {size}")
    if not found.strip("0"):
        raise Malformed(f"{what} is all zeros, which OTLP calls invalid")
    return found


# ---------------------------------------------------------------------------------------- documents


def _list(parent: dict[str, Any], key: str, line: int | None, *alternatives: str) -> list[dict[str, Any]]:
    """A container list of objects (None: empty); ShapeError for anything else."""
    value = parent.get(key)
    for other in alternatives:
        value = value or parent.get(other)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ShapeError(line, f"{key} must be a list of objects")
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Malformed(f"{what} must be an object, not {_kind(value)}")
    return value


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Malformed(f"{what} must be text, not {_kind(value)}")
    return value


def _scope(holder: dict[str, Any]) -> tuple[str, str]:
    scope = holder.get("scope") or holder.get("instrumentationLibrary")
    if not isinstance(scope, dict):
        return "", ""
    name, version = scope.get("name"), scope.get("version")
    return (name if isinstance(name, str) else "")[:200], (version if isinstance(version, str) else "")[:60]


def _span(raw: dict[str, Any], resource: dict[str, Any], scope: tuple[str, str], line: int | None) -> Span:
    start = nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano")
    end = nanos(raw.get("endTimeUnixNano"), "endTimeUnixNano") or start
    span = Span(
        hex_id(raw.get("traceId"), "traceId", TRACE_ID_BYTES),
        hex_id(raw.get("spanId"), "spanId", SPAN_ID_BYTES),
        start,
        end,
        attributes(raw.get("attributes")),
        resource,
        line,
        scope=scope,
    )
    status = _object(raw.get("status"), "status")
    if status.get("code") in ("STATUS_CODE_ERROR", 2):
        span.error = _text(status.get("message"), "status.message") or "the LLM call failed"
    events = raw.get("events") or []
    if not isinstance(events, list):
        raise Malformed(f"events must be a list, not {_kind(events)}")
    for number, event in enumerate(events):
        event = _object(event, f"events[{number}]")
        span.events.append(
            (
                _text(event.get("name"), f"events[{number}].name"),
                nanos(event.get("timeUnixNano"), f"events[{number}].timeUnixNano"),
                attributes(event.get("attributes"), f"events[{number}].attributes"),
            )
        )
    return span


def _log(raw: dict[str, Any]) -> tuple[str, str, int, str, dict[str, Any]]:
    attrs = attributes(raw.get("attributes"))
    name = _text(raw.get("eventName"), "eventName") or attrs.get("event.name") or ""
    body = any_value(raw.get("body"), "body")
    if isinstance(body, dict):
        attrs = {**attrs, "__body__": body}
    # The GenAI events carry no timeUnixNano (only when it was observed): either places it in time.
    time = nanos(raw.get("timeUnixNano"), "timeUnixNano") or nanos(
        raw.get("observedTimeUnixNano"), "observedTimeUnixNano"
    )
    return (
        hex_id(raw.get("traceId"), "traceId", TRACE_ID_BYTES, "log record"),
        hex_id(raw.get("spanId"), "spanId", SPAN_ID_BYTES, "log record"),
        time,
        str(name),
        attrs,
    )


def _label(raw: dict[str, Any], key: str, kind: str, number: int, alone: str = "") -> str:
    """How a rejected span or log record is named: its (span's) id when it has one, else its position (as
    `alone`, when that differs: a log record without its span's id is "log record #3")."""
    value = raw.get(key)
    return f"{kind} {value[:32]}" if isinstance(value, str) and value else f"{alone or kind} #{number + 1}"


def _document(doc: dict[str, Any], line: int | None, decoded: Decoded, logs: list[Any]) -> None:
    for rs in _list(doc, "resourceSpans", line):
        try:
            resource = attributes(_object(rs.get("resource"), "resource").get("attributes"), "resource")
        except Malformed as exc:
            resource_error: str | None = str(exc)
        else:
            resource_error = None
        for ss in _list(rs, "scopeSpans", line, "instrumentationLibrarySpans"):
            scope = _scope(ss)
            for raw in _list(ss, "spans", line):
                number = decoded.span_records
                decoded.span_records += 1
                try:
                    if resource_error:
                        raise Malformed(resource_error)
                    span = _span(raw, resource, scope, line)
                except Malformed as exc:
                    decoded.rejected_spans.append((line, f"{_label(raw, 'spanId', 'span', number)}: {exc}"))
                    continue
                decoded.spans[span.ref] = span
    for rl in _list(doc, "resourceLogs", line):
        for sl in _list(rl, "scopeLogs", line):
            for raw in _list(sl, "logRecords", line):
                number = decoded.log_records
                decoded.log_records += 1
                try:
                    logs.append(_log(raw))
                except Malformed as exc:
                    label = _label(raw, "spanId", "log record of span", number, "log record")
                    decoded.rejected_logs.append((line, f"{label}: {exc}"))


def decode_documents(documents: list[tuple[int | None, Any]]) -> Decoded:
    """The spans of OTLP JSON documents (resourceSpans and resourceLogs), by (trace id, span id); a log
    record becomes an event of its span (a span of its own, without attributes, when the span is absent).
    A document of the wrong shape raises ShapeError naming its line; a malformed span or log record is
    rejected on its own (`Decoded.rejected_*`)."""
    decoded = Decoded()
    logs: list[tuple[str, str, int, str, dict[str, Any]]] = []
    for line, doc in documents:
        if not isinstance(doc, dict):
            raise ShapeError(line, "a document must be an object with resourceSpans or resourceLogs")
        _document(doc, line, decoded, logs)
    for trace_id, span_id, time, name, attrs in logs:
        if (trace_id, span_id) not in decoded.spans:
            decoded.spans[(trace_id, span_id)] = Span(trace_id, span_id, time, time, {}, {}, None)
        decoded.spans[(trace_id, span_id)].events.append((name, time, attrs))
    return decoded
