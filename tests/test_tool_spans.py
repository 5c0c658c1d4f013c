"""Tool spans read back on import: an `execute_tool` span fills in the tool call it belongs to (its
duration, result, error) or, when no message mentions the call, becomes a tool call of its bot turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.record.folder import RunFolder
from simulator.record.parts import TextPart, ToolCallPart
from tests.traces_helpers import ROOT, cli, require

T0 = 1_700_000_000_000_000_000  # ns
MS = 1_000_000


def _value(v: Any) -> dict[str, Any]:
    return {"stringValue": v if isinstance(v, str) else json.dumps(v)}


def _span(span: str, start: int, end: int, attrs: dict[str, Any], error: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": "a" * 32,
        "spanId": span,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
    }
    if error:
        out["status"] = {"code": "STATUS_CODE_ERROR", "message": error}
    return out


def _chat(
    span: str, start: int, end: int, history: list[dict[str, Any]], reply: list[dict[str, Any]]
) -> dict[str, Any]:
    return _span(
        span,
        start,
        end,
        {
            "gen_ai.conversation.id": "c1",
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.input.messages": history,
            "gen_ai.output.messages": [{"role": "assistant", "parts": reply}],
        },
    )


def _tool(span: str, start: int, end: int, name: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    attrs = {
        "gen_ai.conversation.id": "c1",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": args,
    }
    attrs.update({k: v for k, v in extra.items() if k != "error"})
    return _span(span, start, end, attrs, extra.get("error"))


def _import(tmp_path: Path, spans: list[dict[str, Any]]) -> list[Any]:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    assert cli("import", path, "--out", tmp_path / "back", "--no-redact") == 0
    (record,) = RunFolder.open(tmp_path / "back").conversations()
    return [t for t in record.turns if t.role == "bot"]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [_text(text)]}


def test_tool_spans_no_message_mentions_become_the_turns_tool_calls(tmp_path: Path) -> None:
    """Messages that omit tool calls (many instrumentations): each tool span is a call of its own turn,
    before the text, with its arguments, result, error and duration."""
    spans = [
        _chat("1" * 16, T0, T0 + 900 * MS, [_user("I have a fever")], [_text("Booked for today.")]),
        _tool(
            "2" * 16,
            T0 + 100 * MS,
            T0 + 350 * MS,
            "find_patient",
            {"name": "Ana"},
            **{"gen_ai.tool.call.result": {"id": "P1"}},
        ),
        _tool("3" * 16, T0 + 400 * MS, T0 + 420 * MS, "book", {"patient": "P1"}, error="slot taken"),
        _chat(
            "4" * 16,
            T0 + 2000 * MS,
            T0 + 2500 * MS,
            [
                _user("I have a fever"),
                {"role": "assistant", "parts": [_text("Booked for today.")]},
                _user("thanks"),
            ],
            [_text("Bye.")],
        ),
        _tool("5" * 16, T0 + 2100 * MS, T0 + 2200 * MS, "close_case", {}),
    ]
    first, second = _import(tmp_path, spans)
    calls = [p for p in first.parts if isinstance(p, ToolCallPart)]
    assert [c.name for c in calls] == ["find_patient", "book"]
    assert (
        calls[0].arguments == {"name": "Ana"} and calls[0].result == {"id": "P1"} and calls[0].error is None
    )
    assert calls[1].error == "slot taken" and calls[1].result is None
    assert [c.latency_s for c in calls] == pytest.approx([0.25, 0.02])
    assert isinstance(first.parts[-1], TextPart) and first.text == "Booked for today."
    assert [p.name for p in second.parts if isinstance(p, ToolCallPart)] == ["close_case"]


def test_a_tool_span_fills_in_the_call_its_message_made(tmp_path: Path) -> None:
    """The reply names the call (by id, or with no id by name and arguments): the span adds its timing and,
    where the messages lack it, its result; no second call appears."""
    reply = [
        {"type": "tool_call", "id": "call_9", "name": "lookup", "arguments": {"q": "rash"}},
        {"type": "tool_call", "name": "triage", "arguments": {"level": "gp"}},
        _text("See your GP."),
    ]
    spans = [
        _chat("1" * 16, T0, T0 + 900 * MS, [_user("a rash")], reply),
        _tool(
            "2" * 16,
            T0 + 10 * MS,
            T0 + 60 * MS,
            "lookup",
            {"q": "rash"},
            **{"gen_ai.tool.call.id": "call_9", "gen_ai.tool.call.result": ["eczema"]},
        ),
        _tool(
            "3" * 16,
            T0 + 70 * MS,
            T0 + 75 * MS,
            "triage",
            {"level": "gp"},
            **{"gen_ai.tool.call.result": "ok"},
        ),
    ]
    (turn,) = _import(tmp_path, spans)
    calls = [p for p in turn.parts if isinstance(p, ToolCallPart)]
    assert [(c.name, c.id, c.result) for c in calls] == [
        ("lookup", "call_9", ["eczema"]),
        ("triage", None, "ok"),
    ]
    assert [c.latency_s for c in calls] == pytest.approx([0.05, 0.005])


def test_tool_calls_survive_export_and_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped clinic suite's tool calls (bookings, a failed reading) come back from an OTel export
    as they were: names, arguments, results, errors and durations."""
    require("opentelemetry.sdk")
    monkeypatch.chdir(ROOT)
    assert cli("run", "examples/clinic_env/suite.yaml", "--out", tmp_path / "run", "--no-progress") == 0
    assert cli("export-otel", tmp_path / "run", "--out", tmp_path / "otel.json") == 0
    assert cli("import", tmp_path / "otel.json", "--out", tmp_path / "back", "--no-redact") == 0

    def calls(folder: Path) -> dict[str, list[tuple[Any, ...]]]:
        return {
            r.id: [
                (p.name, p.arguments, p.result, p.error, round(p.latency_s or 0.0, 3))
                for t in r.turns
                if t.role == "bot"
                for p in t.parts
                if isinstance(p, ToolCallPart)
            ]
            for r in RunFolder.open(folder).conversations()
        }

    original, back = calls(tmp_path / "run"), calls(tmp_path / "back")
    assert sum(len(v) for v in original.values()) >= 6 and back == original
