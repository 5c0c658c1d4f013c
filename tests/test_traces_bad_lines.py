"""A line of a JSON-lines file that is not UTF-8 is skipped and named; the other lines import.

Before: one non-UTF-8 line rejected the whole file, with the wrong diagnosis: `binary data, not text (OTLP
protobuf?)` without --format (the sniff called any undecodable byte in the first 64 KiB binary), and
`midbad.jsonl:1: not UTF-8 (byte 23)` with `--format jsonl` when the bad byte was on line 3 (the line's
offset, reported as the file's). The mechanism: JSON-lines and OTLP JSON-lines files are decoded line by
line (readers.py `unreadable_line`), and the binary sniff decides by the share of lines that are not text.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from simulator.record.folder import RunFolder
from tests.traces_helpers import cli


def _row(key: str) -> bytes:
    messages = [{"role": "user", "content": f"hello from {key}"}, {"role": "assistant", "content": "hi"}]
    return json.dumps({"conversation_id": key, "messages": messages}).encode() + b"\n"


BAD = b'{"conversation_id": "bad\xff\xfe", "messages": []}\n'  # byte 24 of the line is \xff
GARBAGE = b"\x9f\x92\x96 garbage \xfe\n"  # not UTF-8 from its byte 0


@pytest.mark.parametrize("fmt", [None, "jsonl"])
@pytest.mark.parametrize(
    ("where", "bad", "byte"), [(1, GARBAGE, 0), (1, BAD, 24), (3, BAD, 24), (5, BAD, 24)]
)
def test_a_jsonl_line_not_utf8_is_skipped_and_the_rest_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str | None, where: int, bad: bytes, byte: int
) -> None:
    rows = [_row(f"conv-{n}") for n in range(4)]
    rows.insert(where - 1, bad)
    source = tmp_path / "t.jsonl"
    source.write_bytes(b"".join(rows))
    options = ["--format", fmt] if fmt else []
    assert cli("import", source, "--out", tmp_path / "run", *options) == 0
    err = capsys.readouterr().err
    skipped = [line for line in err.splitlines() if line.startswith("skipped:")]
    assert skipped == [f"skipped: {source}:{where}: not UTF-8 (byte {byte} of the line)"], err
    ids = sorted(r.bot_conversation_id for r in RunFolder.open(tmp_path / "run").conversations())
    assert ids == [f"conv-{n}" for n in range(4)]


def _otlp_line(key: str, number: int) -> bytes:
    user = [{"role": "user", "parts": [{"type": "text", "content": f"hello from {key}"}]}]
    bot = [{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}]
    span = {
        "traceId": f"{number + 1:032x}",
        "spanId": f"{number + 1:016x}",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.conversation.id", "value": {"stringValue": key}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(user)}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(bot)}},
        ],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode() + b"\n"


@pytest.mark.parametrize("where", [1, 2, 4])
def test_an_otlp_json_line_not_utf8_is_skipped_and_the_rest_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: int
) -> None:
    lines = [_otlp_line(f"conv-{n}", n) for n in range(3)]
    bad = _otlp_line("bad", 9).replace(b"hello from bad", b"hello \xc3\x28 from bad")
    lines.insert(where - 1, bad)
    source = tmp_path / "t.jsonl"
    source.write_bytes(b"".join(lines))
    assert cli("import", source, "--out", tmp_path / "run") == 0
    err = capsys.readouterr().err
    skipped = [line for line in err.splitlines() if line.startswith("skipped:")]
    assert len(skipped) == 1 and skipped[0].startswith(f"skipped: {source}:{where}: not UTF-8 (byte "), err
    ids = sorted(r.bot_conversation_id for r in RunFolder.open(tmp_path / "run").conversations())
    assert ids == ["conv-0", "conv-1", "conv-2"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_bytes_are_still_refused_as_binary_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    source = tmp_path / "t.jsonl"
    source.write_bytes(random.Random(seed).randbytes(20_000))
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "binary data" in err and err.count("\n") == 1 and "skipped" not in err


def test_a_real_otlp_protobuf_export_is_still_refused_as_binary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SDK's own encoder, GenAI spans whose messages are long text: most of the bytes are text, but
    nearly every 0x0a-separated stretch holds protobuf's tags and lengths."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    history: list[dict[str, object]] = []
    for _ in range(6):
        history.append({"role": "user", "parts": [{"type": "text", "content": "crushing chest pain " * 40}]})
        with provider.get_tracer("t").start_as_current_span("chat") as span:
            span.set_attribute("gen_ai.conversation.id", "c1")
            span.set_attribute("gen_ai.input.messages", json.dumps(history))
    source = tmp_path / "t.jsonl"
    source.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    assert cli("import", source, "--out", tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "binary data" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "odd",
    [b'{"resourceSpans": []}\n', b'{"conversation_id": "quoting", "messages": [{"role": "user", '
     b'"content": "my log said \\"resourceSpans\\": []"}]}\n', b'{"resourceLogs": []}\n'],
)  # fmt: skip
def test_a_transcript_file_is_told_by_its_first_record_not_by_a_word_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], odd: bytes
) -> None:
    """A JSONL file with `"resourceSpans"` anywhere in its head (a stray OTLP line, a message quoting one)
    was taken for OTLP and refused whole: 'holds no spans or log records'. Its first record decides."""
    source = tmp_path / "t.jsonl"
    source.write_bytes(_row("conv-0") + odd + _row("conv-1"))
    assert cli("import", source, "--out", tmp_path / "run") == 0, capsys.readouterr().err
    ids = sorted(r.bot_conversation_id for r in RunFolder.open(tmp_path / "run").conversations())
    assert "conv-0" in ids and "conv-1" in ids


@pytest.mark.parametrize("pretty", [False, True])
def test_an_otlp_export_is_still_told_by_its_first_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pretty: bool
) -> None:
    """Compact lines and one pretty-printed document longer than the sniffed head are both OTLP."""
    source = tmp_path / "t.json"
    if pretty:
        documents = [json.loads(_otlp_line(f"conv-{n}", n)) for n in range(300)]
        merged = {"resourceSpans": [rs for d in documents for rs in d["resourceSpans"]]}
        source.write_text(json.dumps(merged, indent=2))
        assert source.stat().st_size > 65536
    else:
        source.write_bytes(b"".join(_otlp_line(f"conv-{n}", n) for n in range(3)))
    assert cli("import", source, "--out", tmp_path / "run") == 0, capsys.readouterr().err
    assert len(list(RunFolder.open(tmp_path / "run").conversations())) == (300 if pretty else 3)
