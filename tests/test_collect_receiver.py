"""`simulator collect`'s receiver with the real OTel SDK exporters (protobuf and JSON, gzip), redaction of
every written file, oversized, malformed and refused requests, the token, rate limit and back-pressure."""

from __future__ import annotations

import gzip
import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.collect_helpers import (
    SECRET_EMAIL,
    SECRET_NHS,
    collector,
    genai_turns,
    receiver,
    records,
    tracer,
    wait_for,
)
from tests.traces_helpers import every_file_text, require

TURNS = [
    (f"I have chest pain, my email is {SECRET_EMAIL}", "Does the pain spread to your arm, jaw or back?"),
    (f"yes, to my left arm. NHS number {SECRET_NHS}", "Call 999 now."),
]


def test_real_protobuf_exporter_gives_one_redacted_conversation(tmp_path: Path) -> None:
    out = tmp_path / "live"
    c = collector(out)
    with receiver(c) as url:
        provider = tracer(url, gzip=True)
        genai_turns(provider, "conv-1", TURNS)
        genai_turns(provider, "conv-2", [("rash on my arm", "How long has it been there?")])
        provider.shutdown()
        wait_for(lambda: c.counts["conversations"] == 2)
    (first,) = [r for r in records(out) if r.bot_conversation_id == "conv-1"]
    assert [t.role for t in first.turns] == ["user", "bot", "user", "bot"]
    assert first.turns[0].messages == ["I have chest pain, my email is [EMAIL]"]
    assert first.turns[2].messages == ["yes, to my left arm. NHS number [NHS_NUMBER]"]
    assert first.turns[3].messages == ["Call 999 now."]
    written = every_file_text(out)
    assert SECRET_EMAIL not in written and SECRET_NHS not in written  # spool, journal, run folders
    assert "[EMAIL]" in (out / ".collect" / "spool.jsonl").read_text()
    from simulator.collect.folders import collected_folders
    from simulator.record.folder import RunFolder

    source = RunFolder.open(collected_folders(out)[0]).read_manifest().source
    assert source["format"] == "otlp-http" and source["redacted_since_start"]["email"] >= 1
    assert source["redacted_since_start"]["nhs_number"] >= 1


def test_sdk_encoded_json_with_and_without_gzip(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from simulator.traces.otlp_json import spans_to_json

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    genai_turns(provider, "json-1", TURNS)
    genai_turns(provider, "json-2", [("fever for two days", "How high is it?")])
    spans = memory.get_finished_spans()
    out = tmp_path / "live"
    c = collector(out)
    with receiver(c) as url:
        plain = json.dumps(spans_to_json(spans[:2])).encode()
        zipped = gzip.compress(json.dumps(spans_to_json(spans[2:])).encode())
        first = httpx.post(f"{url}/v1/traces", content=plain, headers={"Content-Type": "application/json"})
        second = httpx.post(
            f"{url}/v1/traces",
            content=zipped,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert (first.status_code, first.text, second.status_code) == (200, "{}", 200)
        wait_for(lambda: c.counts["conversations"] == 2)
    keys = {r.bot_conversation_id: len(r.turns) for r in records(out)}
    assert keys == {"json-1": 4, "json-2": 2}
    assert SECRET_EMAIL not in every_file_text(out)


def _post(url: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/traces", content=body, headers={"Content-Type": "application/json", **headers}
    )


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        (b"\xff\xfe not json", {}, 400, "not JSON"),
        (b'{"resourceSpans": 3}', {}, 400, "no resourceSpans list"),
        (b'{"resourceSpans": [1, 2]}', {}, 400, "not an OTLP export request"),
        (b"\x0a\xff\xff\xff\xff\x0f", {"Content-Type": "application/x-protobuf"}, 400, "protobuf"),
        (b"{}", {"Content-Type": "text/plain"}, 415, "not supported"),
        (b"{}", {"Content-Encoding": "br"}, 415, "not supported"),
        (b"not gzip at all", {"Content-Encoding": "gzip"}, 400, "not valid gzip"),
    ],
)
def test_malformed_requests_get_one_clear_refusal(
    tmp_path: Path, body: bytes, headers: dict[str, str], status: int, says: str
) -> None:
    c = collector(tmp_path / "live")
    with receiver(c) as url:
        response = _post(url, body, **headers)
        good = _post(url, b'{"resourceSpans": []}')
    assert response.status_code == status and says in response.text
    assert good.status_code == 200  # the receiver goes on
    assert c.counts["spans"] == 0


def test_oversized_bodies_are_refused_before_they_are_read_in_full(tmp_path: Path) -> None:
    c = collector(tmp_path / "live", max_body=10_000)
    with receiver(c) as url:
        declared = _post(url, b" " * 20_000)
        bomb = _post(url, gzip.compress(b" " * 5_000_000), **{"Content-Encoding": "gzip"})
        # Chunked, no Content-Length: the stream is cut at the limit, not buffered to the end.
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(str(parts.hostname), parts.port, timeout=10)
        conn.putrequest("POST", "/v1/traces")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for _ in range(5):
            chunk = b" " * 4096
            conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        conn.send(b"0\r\n\r\n")
        streamed = conn.getresponse()
        streamed_status = streamed.status
        conn.close()
    assert declared.status_code == 413 and "limit of 10000 bytes" in declared.text
    assert bomb.status_code == 413 and "decompressed" in bomb.text
    assert streamed_status == 413
    assert c.counts["refused_413"] == 3 and c.counts["spans"] == 0


def test_rate_limit_answers_429_with_retry_after(tmp_path: Path) -> None:
    c = collector(tmp_path / "live", rate=1.0, burst=2.0)
    with receiver(c) as url:
        answers = [_post(url, b'{"resourceSpans": []}') for _ in range(4)]
    assert [a.status_code for a in answers[:2]] == [200, 200]
    refused = [a for a in answers if a.status_code == 429]
    assert refused and all(int(a.headers["Retry-After"]) >= 1 for a in refused)


def test_back_pressure_answers_503_when_the_open_spans_are_at_their_limit(tmp_path: Path) -> None:
    c = collector(tmp_path / "live", max_open_spans=2, idle_s=60)
    with receiver(c) as url:
        provider = tracer(url)
        genai_turns(provider, "a", [("one", "two"), ("three", "four")])  # two spans: the limit
        provider.shutdown()
        wait_for(lambda: c.assembler.spans == 2)
        refused = _post(url, b'{"resourceSpans": []}')
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    assert c.counts["refused_busy"] == 1


def test_a_token_is_needed_when_one_is_set(tmp_path: Path) -> None:
    from simulator.commands.collect import TOKEN_ENV
    from simulator.record.redact import forget_secrets
    from simulator.serve.config import access_token

    assert access_token("127.0.0.1", TOKEN_ENV) is None and access_token("0.0.0.0", TOKEN_ENV)  # always one
    forget_secrets()  # the token made above (tests/test_access_tokens.py: it is redacted)
    c = collector(tmp_path / "live")
    with receiver(c, token="s3cret-token") as url:
        without = _post(url, b'{"resourceSpans": []}')
        wrong = _post(url, b'{"resourceSpans": []}', Authorization="Bearer nope")
        provider = tracer(url, headers={"Authorization": "Bearer s3cret-token"})
        genai_turns(provider, "with-token", [("hello", "hi, what is wrong?")])
        provider.shutdown()
        wait_for(lambda: c.counts["conversations"] == 1)
    assert without.status_code == 401 and wrong.status_code == 401


@pytest.mark.parametrize("logs_first", [False, True])
def test_genai_events_as_log_records_on_v1_logs(tmp_path: Path, logs_first: bool) -> None:
    """The older per-message events, sent by the real OTLP log exporter, join their span's conversation
    whichever arrives first."""
    require("opentelemetry.sdk")
    from opentelemetry import trace as trace_api
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    c = collector(tmp_path / "live", idle_s=1.0)
    with receiver(c) as url:
        logs = LoggerProvider()
        logs.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{url}/v1/logs")))
        logger = logs.get_logger("genai")
        provider = tracer(url)
        span = provider.get_tracer("genai").start_span(
            "chat", attributes={"gen_ai.conversation.id": "events-1"}
        )
        context = trace_api.set_span_in_context(span)
        logger.emit(
            event_name="gen_ai.user.message", body={"content": f"help, {SECRET_EMAIL}"}, context=context
        )
        logger.emit(
            event_name="gen_ai.choice",
            body={"index": 0, "finish_reason": "stop", "message": {"content": "What is the matter?"}},
            context=context,
        )
        if logs_first:
            logs.force_flush()
            wait_for(lambda: c.counts["spans"] >= 1)
        span.end()
        provider.shutdown()
        logs.shutdown()
        wait_for(lambda: c.counts["conversations"] == 1)
    (record,) = records(tmp_path / "live")
    assert record.bot_conversation_id == "events-1"
    assert [(t.role, t.text) for t in record.turns] == [
        ("user", "help, [EMAIL]"),
        ("bot", "What is the matter?"),
    ]
    assert SECRET_EMAIL not in every_file_text(tmp_path / "live")
