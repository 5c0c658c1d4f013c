"""Accepted spans as the collector keeps them: redacted first, then one JSON line each in the spool.

A span is redacted (attribute, event and resource values and keys, the status message) before it is
written anywhere, so neither the spool nor a run folder ever holds what the redaction patterns catch;
its conversation and user ids get a keyed pseudonym instead of the placeholder (traces/pseudonym.py).
Trace and span ids stay as they are: they are identifiers, and dedup and restarts need them exact.
"""

from __future__ import annotations

__all__ = ["Ref", "from_line", "redacted", "to_line"]

import json
from typing import Any

import orjson

from simulator.traces.otlp_decode import Span, nanos
from simulator.traces.pseudonym import Pseudonyms

Ref = tuple[str, str]


def redacted(span: Span, pseudonyms: Pseudonyms) -> Span:
    """A copy of the span with every string a person could have typed redacted; identifiers that group
    spans (conversation and user ids) pseudonymised instead, so distinct ids stay distinct."""
    redactor = pseudonyms.redactor
    return Span(
        span.trace_id,
        span.span_id,
        span.start,
        span.end,
        pseudonyms.attributes_of(span.attributes),
        pseudonyms.attributes_of(span.resource),
        None,
        [(name, time, redactor.value(attrs)) for name, time, attrs in span.events],
        redactor.text(span.error) if span.error is not None else None,
        span.scope,
    )


def to_line(span: Span) -> bytes:
    """The span as one JSON line, UTF-8 (newline included). Written by orjson, several times faster than the
    json module on a span's long message texts, with the same text; the json module's for what orjson does
    not write (an integer past 64 bits; a lone surrogate, which then fails to encode as before). A float may
    be written in another form of the same number (`1e16` for `1e+16`); the spans hold no NaN or infinity
    (the door turns them into text or refuses them)."""
    data: dict[str, Any] = {"t": span.trace_id, "s": span.span_id, "a": span.start, "b": span.end}
    if span.attributes:
        data["at"] = span.attributes
    if span.resource:
        data["r"] = span.resource
    if span.events:
        data["ev"] = span.events
    if span.error is not None:
        data["e"] = span.error
    if span.scope != ("", ""):
        data["sc"] = list(span.scope)
    try:
        return orjson.dumps(data) + b"\n"
    except TypeError:
        return (json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def from_line(text: str | bytes) -> Span:
    """A span from its JSON line; ValueError when the line is not one (times checked as at the door). Read by
    orjson, or, for what it does not read (an integer past 64 bits, a lone surrogate's escape, damage), by
    the json module, which gives the same values or the same error as before."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        data = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    if not isinstance(data, dict) or "t" not in data or "s" not in data:
        raise ValueError("not a spooled span")
    scope = data.get("sc") or ["", ""]
    return Span(
        str(data["t"]),
        str(data["s"]),
        nanos(data.get("a"), "start"),
        nanos(data.get("b"), "end"),
        dict(data.get("at") or {}),
        dict(data.get("r") or {}),
        None,
        [(str(n), nanos(t, "event time"), dict(a)) for n, t, a in data.get("ev") or []],
        str(data["e"]) if data.get("e") is not None else None,
        (str(scope[0]), str(scope[1])),
    )
