"""Importing traces says what is wrong in one line (issue 30, items 11, 19 and 14): OTLP JSON of the wrong
shape, cut short, or protobuf bytes; spans whose messages were not captured (exit non-zero, with the cause
and the fix); a `--conversation-key` that no span has; ids in `scenario#repeat` form kept as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.record.folder import RunFolder
from simulator.traces.records import record_ids
from tests.traces_helpers import cli

SPAN = {
    "traceId": "0af7651916cd43dd8448eb211c80319c",
    "spanId": "b7ad6b7169203331",
    "startTimeUnixNano": "1700000000000000000",
    "endTimeUnixNano": "1700000002500000000",
    "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-x"}},
        {"key": "gen_ai.conversation.id", "value": {"stringValue": "case-7#2"}},
    ],
}
MESSAGES = [
    {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "chest pain"}]}])}},
    {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "call 999"}]}])}},
]  # fmt: skip


def _doc(spans: list[dict]) -> dict:
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}


def _with_messages() -> dict:
    return {**SPAN, "attributes": SPAN["attributes"] + MESSAGES}


WRONG_SHAPES = {
    "resourceSpans an object": {"resourceSpans": {"scopeSpans": []}},
    "scopeSpans items strings": {"resourceSpans": [{"scopeSpans": ["x"]}]},
    "spans a string": {"resourceSpans": [{"scopeSpans": [{"spans": "nope"}]}]},
    "attributes an object": {
        "resourceSpans": [{"scopeSpans": [{"spans": [{**SPAN, "attributes": {"a": 1}}]}]}]
    },
}


@pytest.mark.parametrize("name", sorted(WRONG_SHAPES))
def test_otlp_of_the_wrong_shape_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    source = tmp_path / "t.json"
    source.write_text(json.dumps(WRONG_SHAPES[name]))
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "expected shape" in err and err.count("\n") == 1 and not (tmp_path / "run").exists()


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_truncated_otlp_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: float
) -> None:
    text = json.dumps(_doc([_with_messages()] * 30), indent=2)
    source = tmp_path / "t.json"
    source.write_text(text[: int(len(text) * cut)])
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "not valid OTLP JSON" in err and err.count("\n") == 1 and "skipped" not in err


@pytest.mark.parametrize(
    "data", [b"\x0a\x8f\x03\x0a\x10" + bytes(range(256)) * 4, b"\x00\x01\x02binary" * 100]
)
def test_protobuf_bytes_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes) -> None:
    source = tmp_path / "t.pb"
    source.write_bytes(data)
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "binary data" in err and "http/json" in err and "skipped" not in err


@pytest.mark.parametrize("count", [1, 5])
def test_spans_without_messages_say_why_and_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int
) -> None:
    source = tmp_path / "t.json"
    source.write_text(json.dumps(_doc([{**SPAN, "spanId": f"{i + 1:016x}"} for i in range(count)])))
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert f"{count} spans, {count} of them LLM calls" in err
    # No scope says which instrumentation made them: both forms of the setting are named.
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in err and "logs" in err


@pytest.mark.parametrize("key", ["session.id", "app.conversation"])
def test_a_conversation_key_no_span_has_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    source = tmp_path / "t.json"
    source.write_text(json.dumps(_doc([_with_messages()])))
    assert cli("import", source, "--out", tmp_path / "run", "--conversation-key", key) == 2
    err = capsys.readouterr().err
    assert f"--conversation-key {key}" in err and "gen_ai.conversation.id" in err


def test_a_record_id_key_and_the_span_duration_are_kept(tmp_path: Path) -> None:
    source = tmp_path / "t.json"
    source.write_text(json.dumps(_doc([_with_messages()])))
    assert cli("import", source, "--out", tmp_path / "run", "--no-redact") == 0
    (record,) = list(RunFolder.open(tmp_path / "run").conversations())
    assert (record.id, record.scenario_id, record.repeat) == ("case-7#2", "case-7", 2)
    assert [t.latency_s for t in record.turns if t.role == "bot"] == [pytest.approx(2.5)]


@pytest.mark.parametrize(
    ("keys", "ids"),
    [
        (["a#0", "a#1", "b#0"], [("a", 0), ("a", 1), ("b", 0)]),
        (["a#0", "a#0"], [("a", 0), ("a-0", 0)]),
        (["x y", "a#3", "a"], [("x-y", 0), ("a", 3), ("a-2", 0)]),
        (["conv 1#2"], [("conv-1-2", 0)]),
    ],
)
def test_record_ids_keep_ours_and_make_others_unique(keys: list[str], ids: list[tuple[str, int]]) -> None:
    taken: set[str] = set()
    kept: set[str] = set()
    got = [record_ids(key, taken, kept) for key in keys]
    assert got == ids
    assert len({f"{s}#{r}" for s, r in got}) == len(got)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_a_deeply_nested_imported_message_is_skipped_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    messages = [{"role": "user", "content": "chest pain"}, {"role": "assistant", "content": "call 999"}]
    good = json.dumps({"conversation_id": "c1", "messages": messages})
    source = tmp_path / "t.jsonl"
    source.write_text(good + "\n" + '{"conversation_id": "c2", "x": ' + _deep(depth) + "}\n")
    assert cli("import", source, "--out", tmp_path / "run", "--no-redact") == 0
    err = capsys.readouterr().err
    assert f"{source}:2" in err and "nested" in err and "deep" in err, err
    assert len(list(RunFolder.open(tmp_path / "run").conversations())) == 1
    spans = tmp_path / "spans.jsonl"
    deep_attr = {"key": "gen_ai.input.messages", "value": {"stringValue": _deep(depth)}}
    bad = {**SPAN, "spanId": "00000000000000aa", "attributes": SPAN["attributes"] + [deep_attr]}
    spans.write_text(json.dumps(_doc([_with_messages()])) + "\n" + json.dumps(_doc([bad])) + "\n")
    assert cli("import", spans, "--out", tmp_path / "run2", "--no-redact") == 0
    assert "nested more than" in capsys.readouterr().err
