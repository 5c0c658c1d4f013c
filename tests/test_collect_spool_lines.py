"""A spooled span's line is written and read by orjson (collect/spans.py), the json module's for what orjson
does not take: every span reads back as the json module wrote and read it, a span it could not write still
fails as it did, and a damaged line is still refused as unreadable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from simulator.collect.spans import from_line, to_line
from simulator.collect.spool import UNREADABLE
from simulator.traces.otlp_decode import Span


def _span(attributes: dict[str, Any], **fields: Any) -> Span:
    return Span("ab" * 16, "cd" * 8, 1_700_000_000_000_000_000, 1_700_000_000_500_000_000, attributes,
                fields.get("resource", {}), None, fields.get("events", []), fields.get("error"),
                fields.get("scope", ("", "")))  # fmt: skip


def _json_line(span: Span) -> str:
    """The line as the json module wrote it before."""
    data: dict[str, Any] = {"t": span.trace_id, "s": span.span_id, "a": span.start, "b": span.end}
    for key, value in (("at", span.attributes), ("r", span.resource), ("ev", span.events)):
        if value:
            data[key] = value
    if span.error is not None:
        data["e"] = span.error
    if span.scope != ("", ""):
        data["sc"] = list(span.scope)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


SPANS = {
    "GenAI messages": _span(
        {"gen_ai.input.messages": json.dumps([{"role": "user", "content": 'a "b"\n\\'}])}
    ),
    "text of every kind": _span({"t": "é ✓ 🙂 \u2028 \x00\x1f\x7f", "k\u00e9y": ["x", {"y": None}]}),
    "numbers": _span({"i": -(2**63), "u": 2**64 - 1, "f": 0.1, "e": 1e16, "small": 1e-7, "b": True}),
    "an integer past 64 bits": _span({"big": 2**70, "neg": -(2**80)}),
    "events, error and scope": _span(
        {},
        events=[("gen_ai.choice", 5, {"n": 1.5})],
        error="failed",
        scope=("openai", "1.2"),
        resource={"s": "x"},
    ),
}


@pytest.mark.parametrize("name", SPANS)
def test_a_span_reads_back_as_the_json_module_has_it(name: str) -> None:
    span = SPANS[name]
    line = to_line(span)
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    assert json.loads(line) == json.loads(_json_line(span))  # the same values
    if name not in ("numbers",):  # a float may take another form of the same number
        assert line.decode("utf-8") == _json_line(span)
    assert vars(from_line(line)) == vars(from_line(_json_line(span))) == vars(from_line(line.decode("utf-8")))


def test_a_lone_surrogate_fails_to_write_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):
        to_line(_span({"t": "a\ud800b"}))


def _as_before(line: bytes) -> Any:
    """What reading the line gave before: the span's fields, or the kind of refusal."""
    try:
        return vars(from_line_before(line))
    except UNREADABLE:
        return "unreadable"


def from_line_before(line: bytes) -> Span:
    """The reader before orjson: UTF-8 decoded strictly, then the json module, then the same checks."""
    data = json.loads(line.decode("utf-8"))
    return from_line(json.dumps(data) if isinstance(data, dict) and "t" in data and "s" in data else "[]")


@pytest.mark.parametrize(
    "line",
    [
        b"\xff\xfe not utf-8\n",
        b'{"t":"x","s":"\xed\xa0\x80"}\n',  # a surrogate encoded as UTF-8 bytes: not UTF-8
        b'{"t":"x","s":"\\ud800"}\n',  # a lone surrogate's escape: read, as the json module reads it
        b'{"t":"x","s":"y","a":"soon"}\n',
        b'{"t":"x"}\n',
        b"[1, 2]\n",
        b'{"t":"x","s":"y","at":{"k":NaN,"big":123456789012345678901234567890}}\n',
        b'{"t":"x","s":"y","at":{"k":1,"k":2}}\n',
        b'{"t":"x","s":"y"',  # cut short
    ],
)
def test_a_damaged_or_odd_line_reads_as_before(line: bytes) -> None:
    try:
        now: Any = vars(from_line(line))
    except UNREADABLE:
        now = "unreadable"
    assert now == _as_before(line)
