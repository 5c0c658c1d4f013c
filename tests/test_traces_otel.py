"""Importing OpenTelemetry GenAI traces: files made by the real SDK, both message representations,
stitching by conversation id / attribute / trace id, de-duplication of repeated history, bad spans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.record.folder import RunFolder
from simulator.traces.genai import messages_from_json
from simulator.traces.otlp import read_otlp
from tests.traces_helpers import cli, require


def _example(tmp_path: Path) -> Path:
    require("opentelemetry.sdk")
    from examples.traces.make_otel_example import main as make

    return make(tmp_path / "traces.json")


def _by_key(folder: Path) -> dict[str, Any]:
    return {r.bot_conversation_id: r for r in RunFolder.open(folder).conversations()}


def _texts(record: Any) -> list[tuple[str, list[str]]]:
    return [(t.role, t.messages) for t in record.turns]


def test_sdk_traces_import_both_representations_deduplicated(tmp_path: Path) -> None:
    source = _example(tmp_path)
    assert cli("import", source, "--out", tmp_path / "run", "--no-redact") == 0
    records = _by_key(tmp_path / "run")
    assert len(records) == 4
    # New representation: three chat spans each repeating the history give each message once.
    first = records["conv-1001"]
    assert [t.role for t in first.turns] == ["user", "bot", "user", "bot"]
    assert first.turns[0].messages[0].startswith("hi, my name is Jane Doe")
    assert first.final_state == {"triage_level": "emergency"}  # the record_decision tool call
    assert first.turns[0].raw["system_instructions"][0].startswith("You are a nurse triage assistant")
    assert first.bot == "openai:gpt-4o-mini"
    assert len(records["conv-1002"].turns) == 6
    # Older representation (per-message events, no conversation id): grouped by the trace.
    (old,) = [r for key, r in records.items() if not key.startswith("conv-")]
    assert _texts(old) == [
        ("user", ["twisted my ankle playing football, can walk on it"]),
        ("bot", ["Rest, ice and elevate it; see your GP if you cannot bear weight after 2 days."]),
    ]
    manifest = RunFolder.open(tmp_path / "run").read_manifest()
    assert manifest.kind == "imported" and manifest.models.user == "real"
    assert manifest.source["format"] == "otel" and manifest.source["sha256"].startswith("sha256:")
    assert manifest.suite is None


def _reordered(source: Path, out: Path) -> Path:
    """The same spans, in reverse order in the file and as JSON lines (one resourceSpans per span)."""
    doc = json.loads(source.read_text())
    lines = []
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                lines.append({"resourceSpans": [{**rs, "scopeSpans": [{**ss, "spans": [span]}]}]})
    out.write_text("".join(json.dumps(line) + "\n" for line in reversed(lines)))
    return out


def test_order_in_the_file_does_not_matter_time_does(tmp_path: Path) -> None:
    source = _example(tmp_path)
    a = {c.key: c.messages for c in read_otlp(source).conversations}
    b = {c.key: c.messages for c in read_otlp(_reordered(source, tmp_path / "lines.jsonl")).conversations}
    assert {k: [(m.role, m.parts) for m in v] for k, v in a.items()} == {
        k: [(m.role, m.parts) for m in v] for k, v in b.items()
    }


def _span(trace: str, span: str, start: int, attrs: dict[str, Any]) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        return {"stringValue": v if isinstance(v, str) else json.dumps(v)}

    return {
        "traceId": trace,
        "spanId": span,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 10),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
    }


def _file(tmp_path: Path, spans: list[dict[str, Any]]) -> Path:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return path


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def test_stitching_by_custom_attribute_across_traces(tmp_path: Path) -> None:
    # One conversation spread over two traces (one per HTTP request), tied by an application attribute.
    spans = [
        _span(
            "a" * 32,
            "1" * 16,
            100,
            {
                "app.session": "s1",
                "gen_ai.input.messages": [_msg("user", "hi")],
                "gen_ai.output.messages": [_msg("assistant", "hello?")],
            },
        ),
        _span(
            "b" * 32,
            "2" * 16,
            200,
            {
                "app.session": "s1",
                "gen_ai.input.messages": [
                    _msg("user", "hi"),
                    _msg("assistant", "hello?"),
                    _msg("user", "fever"),
                ],
                "gen_ai.output.messages": [_msg("assistant", "how high?")],
            },
        ),
        _span(
            "c" * 32,
            "3" * 16,
            150,
            {
                "app.session": "s2",
                "gen_ai.input.messages": [_msg("user", "rash")],
                "gen_ai.output.messages": [_msg("assistant", "where?")],
            },
        ),
    ]
    parsed = read_otlp(_file(tmp_path, spans), "app.session")
    found = {c.key: [(m.role, m.parts[0]["content"]) for m in c.messages] for c in parsed.conversations}
    assert found == {
        "s1": [("user", "hi"), ("assistant", "hello?"), ("user", "fever"), ("assistant", "how high?")],
        "s2": [("user", "rash"), ("assistant", "where?")],
    }
    # Without the attribute, each trace is its own conversation.
    assert len(read_otlp(_file(tmp_path, spans)).conversations) == 3


def test_tool_call_responses_accept_response_and_result() -> None:
    for field in ("response", "result"):
        (message,) = messages_from_json(
            json.dumps(
                [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", field: "done"}]}]
            ),
            "x",
        )
        assert message.parts == [{"type": "tool_call_response", "id": "c1", "response": "done"}]


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("{not json", "not JSON"),
        (json.dumps({"role": "user"}), "must be a JSON array"),
        (json.dumps([{"parts": []}]), "must be an object with a role"),
        (json.dumps([{"role": "user", "parts": [{"content": "x"}]}]), "a part must be an object with a type"),
    ],
)
def test_a_malformed_span_is_reported_and_the_rest_imports(tmp_path: Path, bad: str, reason: str) -> None:
    good = _span(
        "a" * 32,
        "1" * 16,
        100,
        {
            "gen_ai.conversation.id": "ok",
            "gen_ai.input.messages": [_msg("user", "hi")],
            "gen_ai.output.messages": [_msg("assistant", "hello")],
        },
    )
    broken = _span("b" * 32, "2" * 16, 200, {"gen_ai.conversation.id": "bad"})
    broken["attributes"].append({"key": "gen_ai.input.messages", "value": {"stringValue": bad}})
    path = _file(tmp_path, [good, broken])
    parsed = read_otlp(path)
    assert [c.key for c in parsed.conversations] == ["ok"]
    (problem,) = parsed.problems
    assert str(path) in str(problem) and "2222222222222222" in str(problem) and reason in str(problem)


def test_bad_json_lines_name_their_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            _span(
                                "a" * 32,
                                "1" * 16,
                                1,
                                {
                                    "gen_ai.input.messages": [_msg("user", "hi")],
                                    "gen_ai.output.messages": [_msg("assistant", "hello")],
                                },
                            )
                        ]
                    }
                ]
            }
        ]
    }
    path = tmp_path / "lines.jsonl"
    path.write_text(json.dumps(good) + "\n{oops\n[1]\n")
    assert cli("import", path, "--format", "otel", "--out", tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert f"{path}:2: not JSON" in err and f"{path}:3: not a JSON object" in err
    manifest = RunFolder.open(tmp_path / "run").read_manifest()
    assert manifest.source["records_skipped"] == 2 and manifest.counts.conversations == 1


def test_exclude_system_keeps_no_system_prompt(tmp_path: Path) -> None:
    source = _example(tmp_path)
    assert cli("import", source, "--out", tmp_path / "run", "--exclude-system") == 0
    text = "".join(p.read_text() for p in (tmp_path / "run").iterdir())
    assert "nurse triage assistant" not in text
    assert RunFolder.open(tmp_path / "run").read_manifest().source["exclude_system"] is True


def _log(trace: str, span: str, at: int, name: str, body: dict[str, Any]) -> dict[str, Any]:
    def kv(value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            return {"kvlistValue": {"values": [{"key": k, "value": kv(v)} for k, v in value.items()]}}
        if isinstance(value, list):
            return {"arrayValue": {"values": [kv(v) for v in value]}}
        if isinstance(value, int):
            return {"intValue": str(value)}
        return {"stringValue": value}

    return {"timeUnixNano": str(at), "traceId": trace, "spanId": span, "eventName": name, "body": kv(body)}


def test_log_based_events_and_the_operation_details_event(tmp_path: Path) -> None:
    trace, span = "d" * 32, "4" * 16
    chat = _span(trace, span, 100, {"gen_ai.conversation.id": "logs"})
    details = _span("e" * 32, "5" * 16, 300, {"gen_ai.conversation.id": "details"})
    details["events"] = [
        {
            "name": "gen_ai.client.inference.operation.details",
            "timeUnixNano": "300",
            "attributes": [
                {
                    "key": "gen_ai.input.messages",
                    "value": {"stringValue": json.dumps([_msg("user", "dizzy")])},
                },
                {
                    "key": "gen_ai.output.messages",
                    "value": {"stringValue": json.dumps([_msg("assistant", "sit down")])},
                },
            ],
        }
    ]
    logs = [
        _log(trace, span, 101, "gen_ai.user.message", {"content": "my head hurts"}),
        _log(
            trace,
            span,
            102,
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "content": "since when?",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "record_decision", "arguments": '{"triage_level": "gp"}'},
                        }
                    ],
                },
            },
        ),
    ]
    path = tmp_path / "mixed.json"
    path.write_text(
        json.dumps(
            {
                "resourceSpans": [{"scopeSpans": [{"spans": [chat, details]}]}],
                "resourceLogs": [{"scopeLogs": [{"logRecords": logs}]}],
            }
        )
    )
    found = {c.key: c for c in read_otlp(path).conversations}
    assert [(m.role, m.parts[0]) for m in found["logs"].messages] == [
        ("user", {"type": "text", "content": "my head hurts"}),
        ("assistant", {"type": "text", "content": "since when?"}),
    ]
    assert found["logs"].messages[1].parts[1] == {
        "type": "tool_call",
        "id": "c1",
        "name": "record_decision",
        "arguments": {"triage_level": "gp"},
    }
    assert [m.parts[0]["content"] for m in found["details"].messages] == ["dizzy", "sit down"]
    assert cli("import", path, "--out", tmp_path / "run") == 0
    records = {r.scenario_id: r for r in RunFolder.open(tmp_path / "run").conversations()}
    assert records["logs"].final_state == {"triage_level": "gp"}


def test_import_never_writes_into_an_existing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _example(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("mine")
    assert cli("import", source, "--out", tmp_path / "run") == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["notes.txt"]


def test_span_ids_repeated_in_other_traces_are_other_spans(tmp_path: Path) -> None:
    # Span ids are unique within a trace only: two traces that reuse ids are still two conversations.
    spans = [
        _span(
            trace * 32,
            "1" * 16,
            start,
            {
                "gen_ai.input.messages": [_msg("user", f"hi from {trace}")],
                "gen_ai.output.messages": [_msg("assistant", "hello")],
            },
        )
        for trace, start in (("a", 100), ("b", 200), ("c", 300))
    ]
    parsed = read_otlp(_file(tmp_path, spans))
    assert sorted(c.messages[0].parts[0]["content"] for c in parsed.conversations) == [
        "hi from a",
        "hi from b",
        "hi from c",
    ]


def test_a_conversation_whose_last_call_failed_is_an_error_not_a_pass_or_fail(tmp_path: Path) -> None:
    first = _span(
        "a" * 32,
        "1" * 16,
        100,
        {
            "gen_ai.conversation.id": "x",
            "gen_ai.input.messages": [_msg("user", "chest pain")],
            "gen_ai.output.messages": [_msg("assistant", "where?")],
        },
    )
    failed = _span(
        "a" * 32,
        "2" * 16,
        200,
        {
            "gen_ai.conversation.id": "x",
            "gen_ai.input.messages": [
                _msg("user", "chest pain"),
                _msg("assistant", "where?"),
                _msg("user", "left arm, call me on 07700 900123"),
            ],
        },
    )
    failed["status"] = {"code": "STATUS_CODE_ERROR", "message": "upstream timeout for 07700 900123"}
    retried = _span(
        "b" * 32,
        "3" * 16,
        300,
        {
            "gen_ai.conversation.id": "y",
            "gen_ai.input.messages": [_msg("user", "rash")],
            "gen_ai.output.messages": [_msg("assistant", "where?")],
        },
    )
    retried_fail = _span(
        "b" * 32,
        "4" * 16,
        250,
        {"gen_ai.conversation.id": "y", "gen_ai.input.messages": [_msg("user", "rash")]},
    )
    retried_fail["status"] = {"code": 2}
    assert (
        cli("import", _file(tmp_path, [first, failed, retried_fail, retried]), "--out", tmp_path / "run") == 0
    )
    records = {r.scenario_id: r for r in RunFolder.open(tmp_path / "run").conversations()}
    assert records["x"].stop_reason == "error" and records["x"].error is not None
    assert records["x"].error.message == "upstream timeout for [PHONE]"
    assert records["x"].turns[-1].messages == ["left arm, call me on [PHONE]"]
    assert records["y"].stop_reason == "user_done" and records["y"].error is None
