"""A span without a usable trace or span id is rejected at the door, never taken as a duplicate.

Before: three OTLP JSON spans of one conversation, two without `traceId`/`spanId` and one with `""` for
both, were each answered `200 {}`; `/status` said `duplicates: 2, spans: 1` and the record held the first
turn only (the three shared the id ("", "")). Ids like `"zz"` were taken the same way. The mechanism: one
rule (`otlp_decode.checked_id`: there, 16 bytes a trace id, 8 a span id, not all zeros) used by the JSON
and the protobuf decoders, so such a span is rejected on its own, naming the span and the field, as any
malformed span is (200 with partial_success beside good spans, 400 alone), for `collect` and `import`.
Log records too: one without its span's usable ids cannot be placed in a conversation (before, it was
taken, 200 {}, and pooled with every other under the span ("", "")); it is rejected the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from simulator.traces.otlp_decode import decode_documents
from tests.collect_helpers import collector, receiver, records, wait_for
from tests.traces_helpers import cli

START = 1_700_000_000_000_000_000
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _span(turn: int, **ids: Any) -> dict[str, Any]:
    """Turn `turn` of conversation `ids-conv` as a GenAI chat span, with the given ids (none: none)."""
    user = [{"role": "user", "parts": [{"type": "text", "content": f"question {turn}"}]}]
    bot = [{"role": "assistant", "parts": [{"type": "text", "content": f"answer {turn}"}]}]
    return {
        **ids,
        "name": "chat",
        "startTimeUnixNano": str(START + turn * 10**9),
        "endTimeUnixNano": str(START + turn * 10**9 + 1),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.conversation.id", "value": {"stringValue": "ids-conv"}},
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(user)}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(bot)}},
        ],
    }


def _request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


# Ids a span may not have (JSON), and the field its rejection names.
BAD_JSON_IDS: dict[str, tuple[dict[str, Any], str]] = {
    "no ids": ({}, "traceId is missing"),
    "empty ids": ({"traceId": "", "spanId": ""}, "traceId is missing"),
    "no span id": ({"traceId": TRACE}, "spanId is missing"),
    "trace id zz": ({"traceId": "zz", "spanId": "b7ad6b7169203331"}, "traceId 'zz' is neither hex"),
    "trace id 8 bytes": ({"traceId": "b7ad6b7169203331", "spanId": "b7ad6b7169203331"}, "traceId is 8 bytes"),
    "span id 16 bytes": ({"traceId": TRACE, "spanId": TRACE}, "spanId is 16 bytes"),
    "span id 3 bytes of hex": ({"traceId": TRACE, "spanId": "abcdef"}, "spanId is 3 bytes"),
    "trace id base64 of 9 bytes": ({"traceId": "AAECAwQFBgcI", "spanId": "b7ad6b7169203331"}, "9 bytes"),
    "span id all zeros": ({"traceId": TRACE, "spanId": "0" * 16}, "spanId is all zeros"),
}


@pytest.mark.parametrize("name", sorted(BAD_JSON_IDS))
def test_the_decoder_rejects_a_span_without_usable_ids(name: str) -> None:
    ids, reason = BAD_JSON_IDS[name]
    good = {"traceId": TRACE, "spanId": "b7ad6b7169203331"}
    # Two such spans beside a good one: both rejected, neither collapsed into the other.
    decoded = decode_documents([(4, _request(_span(1, **good), _span(2, **ids), _span(3, **ids)))])
    assert list(decoded.spans) == [(TRACE, "b7ad6b7169203331")]
    assert len(decoded.rejected_spans) == 2
    assert all(line == 4 and reason in why for line, why in decoded.rejected_spans), decoded.rejected_spans


def test_base64_ids_of_the_right_length_are_still_taken() -> None:
    """Protobuf's generic JSON mapping writes ids in base64: 16 and 8 bytes are taken, as hex."""
    ids = {"traceId": "AAECAwQFBgcICQoLDA0ODw==", "spanId": "AQIDBAUGBwg="}
    decoded = decode_documents([(1, _request(_span(1, **ids)))])
    assert list(decoded.spans) == [("000102030405060708090a0b0c0d0e0f", "0102030405060708")]


def test_collect_rejects_id_less_json_spans_and_counts_no_duplicates(tmp_path: Path) -> None:
    """The tester's case over HTTP: id-less spans alone are 400 naming the field; beside a good span, 200
    with partial_success; nothing is a duplicate, and the good turns are all written."""
    out = tmp_path / "live"
    with receiver(collector(out, idle_s=0.3), tick_s=0.05) as url, httpx.Client(base_url=url) as client:
        for turn, ids in enumerate([{}, {"traceId": "", "spanId": ""}, {"traceId": "zz", "spanId": "zz"}]):
            alone = client.post("/v1/traces", json=_request(_span(turn, **ids)), timeout=10)
            assert alone.status_code == 400 and "traceId" in alone.text, alone.text
        for turn in (1, 2, 3):
            good = _span(turn, traceId=TRACE, spanId=f"{turn:016x}")
            answer = client.post("/v1/traces", json=_request(good, _span(10 + turn)), timeout=10)
            assert answer.status_code == 200, answer.text
            partial = answer.json()["partialSuccess"]
            assert partial["rejectedSpans"] == "1" and "traceId is missing" in partial["errorMessage"]
        wait_for(lambda: len(records(out)) == 1)
        status = client.get("/status", timeout=10).json()
    assert status["counts"]["duplicates"] == 0 and status["counts"]["spans"] == 3
    assert status["health"]["rejected_spans"] == 6
    (record,) = records(out)
    said = [t.text for t in record.turns]
    assert said == ["question 1", "answer 1", "question 2", "answer 2", "question 3", "answer 3"]


# Ids a protobuf span may not have (bytes), and the field its rejection names.
BAD_PROTO_IDS: dict[str, tuple[bytes, bytes, str]] = {
    "no ids": (b"", b"", "traceId is missing"),
    "no span id": (b"\1" * 16, b"", "spanId is missing"),
    "trace id 15 bytes": (b"\1" * 15, b"\2" * 8, "traceId is 15 bytes"),
    "span id 16 bytes": (b"\1" * 16, b"\2" * 16, "spanId is 16 bytes"),
    "trace id all zeros": (b"\0" * 16, b"\2" * 8, "traceId is all zeros"),
}


@pytest.mark.parametrize("name", sorted(BAD_PROTO_IDS))
def test_collect_rejects_protobuf_spans_without_usable_ids(tmp_path: Path, name: str) -> None:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

    trace_id, span_id, reason = BAD_PROTO_IDS[name]

    def proto(turn: int, trace: bytes, span: bytes) -> ProtoSpan:
        raw = _span(turn)
        attrs = [
            KeyValue(key=a["key"], value=AnyValue(string_value=a["value"]["stringValue"]))
            for a in raw["attributes"]
        ]
        start = START + turn * 10**9
        return ProtoSpan(
            trace_id=trace, span_id=span, name="chat", start_time_unix_nano=start,
            end_time_unix_nano=start + 1, attributes=attrs,
        )  # fmt: skip

    def body(*spans: ProtoSpan) -> bytes:
        request = trace_service_pb2.ExportTraceServiceRequest(
            resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])]
        )
        return bytes(request.SerializeToString())

    headers = {"Content-Type": "application/x-protobuf"}
    out = tmp_path / "live"
    with receiver(collector(out, idle_s=0.3), tick_s=0.05) as url, httpx.Client(base_url=url) as client:
        alone = client.post("/v1/traces", content=body(proto(0, trace_id, span_id)), headers=headers)
        assert alone.status_code == 400 and reason in alone.text, alone.text
        mixed = body(
            proto(1, b"\7" * 16, b"\1" * 8), proto(2, trace_id, span_id), proto(3, trace_id, span_id)
        )
        answer = client.post("/v1/traces", content=mixed, headers=headers, timeout=10)
        assert answer.status_code == 200
        partial = trace_service_pb2.ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_spans == 2 and reason in partial.error_message, partial
        wait_for(lambda: len(records(out)) == 1)
        status = client.get("/status", timeout=10).json()
    assert status["counts"]["duplicates"] == 0 and status["counts"]["spans"] == 1


def test_import_skips_id_less_spans_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "t.jsonl"
    lines = [
        _request(_span(1, traceId=TRACE, spanId="b7ad6b7169203331")),
        _request(_span(2)),
        _request(_span(3, traceId="", spanId="")),
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli("import", source, "--out", tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert f"{source}:2: span #2: traceId is missing" in err and f"{source}:3: span #3: traceId" in err, err


# ------------------------------------------------------------------------------------------ log records
# A log record is placed in its conversation by its span's ids; before, one without them was taken (200 {})
# and pooled with every other id-less log record under the span ("", ""), in no conversation.

GOOD_LOG_IDS = {"traceId": TRACE, "spanId": "b7ad6b7169203331"}
BAD_LOG_IDS: dict[str, tuple[dict[str, Any], str]] = {
    "no ids": ({}, "traceId is missing"),
    "empty ids": ({"traceId": "", "spanId": ""}, "traceId is missing"),
    "trace id only": ({"traceId": TRACE}, "spanId is missing"),
    "span id only": ({"spanId": "b7ad6b7169203331"}, "traceId is missing"),
    "trace id zz": ({"traceId": "zz", "spanId": "b7ad6b7169203331"}, "traceId 'zz' is neither hex"),
    "span id 3 bytes": ({"traceId": TRACE, "spanId": "abcdef"}, "spanId is 3 bytes"),
    "trace id all zeros": ({"traceId": "0" * 32, "spanId": "b7ad6b7169203331"}, "traceId is all zeros"),
}


def _log(turn: int, **ids: Any) -> dict[str, Any]:
    """A GenAI user-message log event for turn `turn`, with the given ids (none: none)."""
    body = {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": f"question {turn}"}}]}}
    return {**ids, "eventName": "gen_ai.user.message", "timeUnixNano": str(START + turn), "body": body}


def _logs(*records: dict[str, Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}


@pytest.mark.parametrize("name", sorted(BAD_LOG_IDS))
def test_the_decoder_rejects_a_log_record_without_usable_ids(name: str) -> None:
    ids, reason = BAD_LOG_IDS[name]
    decoded = decode_documents([(7, _logs(_log(1, **GOOD_LOG_IDS), _log(2, **ids), _log(3, **ids)))])
    assert list(decoded.spans) == [(TRACE, "b7ad6b7169203331")]
    assert len(decoded.spans[(TRACE, "b7ad6b7169203331")].events) == 1
    assert [line for line, _ in decoded.rejected_logs] == [7, 7], decoded.rejected_logs
    reasons = [why for _, why in decoded.rejected_logs]
    assert all(reason in why and "log record" in why for why in reasons), reasons


def test_collect_rejects_id_less_json_log_records_and_counts_them(tmp_path: Path) -> None:
    """Alone, 400 naming the field; beside a good record, 200 with partial_success (rejectedLogRecords),
    counted in /status."""
    out = tmp_path / "live"
    with receiver(collector(out, idle_s=60.0), tick_s=0.05) as url, httpx.Client(base_url=url) as client:
        for turn, name in enumerate(sorted(BAD_LOG_IDS)):
            ids, reason = BAD_LOG_IDS[name]
            alone = client.post("/v1/logs", json=_logs(_log(turn, **ids)), timeout=10)
            assert alone.status_code == 400 and reason in alone.text, (name, alone.text)
            mixed = _logs(_log(turn, **GOOD_LOG_IDS), _log(turn, **ids))
            answer = client.post("/v1/logs", json=mixed, timeout=10)
            assert answer.status_code == 200, answer.text
            partial = answer.json()["partialSuccess"]
            assert partial["rejectedLogRecords"] == "1" and reason in partial["errorMessage"], (name, partial)
        status = client.get("/status", timeout=10).json()
    assert status["health"]["rejected_log_records"] == 2 * len(BAD_LOG_IDS)
    # Each good record a new event of its span; nothing pooled under an empty id, nothing a duplicate.
    assert status["counts"]["spans"] == len(BAD_LOG_IDS), status["counts"]
    assert status["counts"]["duplicates"] == 0, status["counts"]


@pytest.mark.parametrize("name", sorted(BAD_PROTO_IDS))
def test_collect_rejects_protobuf_log_records_without_usable_ids(tmp_path: Path, name: str) -> None:
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

    trace_id, span_id, reason = BAD_PROTO_IDS[name]

    def record(turn: int, trace: bytes, span: bytes) -> LogRecord:
        return LogRecord(
            trace_id=trace, span_id=span, event_name="app.note", time_unix_nano=START + turn,
            body=AnyValue(string_value=f"note {turn}"),
        )  # fmt: skip

    def body(*records: LogRecord) -> bytes:
        request = logs_service_pb2.ExportLogsServiceRequest(
            resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=list(records))])]
        )
        return bytes(request.SerializeToString())

    headers = {"Content-Type": "application/x-protobuf"}
    with receiver(collector(tmp_path / "live", idle_s=60.0)) as url, httpx.Client(base_url=url) as client:
        alone = client.post("/v1/logs", content=body(record(0, trace_id, span_id)), headers=headers)
        assert alone.status_code == 400 and reason in alone.text, alone.text
        good = record(1, b"\7" * 16, b"\1" * 8)
        mixed = body(good, record(2, trace_id, span_id), record(3, trace_id, span_id))
        answer = client.post("/v1/logs", content=mixed, headers=headers, timeout=10)
        assert answer.status_code == 200
        partial = logs_service_pb2.ExportLogsServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_log_records == 2 and reason in partial.error_message, partial
        status = client.get("/status", timeout=10).json()
    assert status["health"]["rejected_log_records"] == 3 and status["counts"]["spans"] == 1


def test_import_skips_id_less_log_records_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "t.jsonl"
    lines = [
        _request(_span(1, **GOOD_LOG_IDS)),
        _logs(_log(2)),
        _logs(_log(3, traceId=TRACE)),
        _logs(_log(4, traceId="0" * 32, spanId="abcdefabcdefabcd")),
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli("import", source, "--out", tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert f"{source}:2: log record #1: traceId is missing" in err, err
    assert f"{source}:3: log record #2: spanId is missing" in err, err
    assert f"{source}:4: log record of span abcdefabcdefabcd: traceId is all zeros" in err, err
    # Only id-less log records: one line saying so, exit 2, nothing written.
    alone = tmp_path / "logs.jsonl"
    alone.write_text(json.dumps(_logs(_log(1), _log(2, traceId=TRACE))) + "\n")
    assert cli("import", alone, "--out", tmp_path / "run2") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "traceId is missing" in err and not (tmp_path / "run2").exists(), err
