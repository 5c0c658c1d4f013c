"""The receiver's HTTP surface (collect/receiver.py, on Starlette): every refusal keeps its status, its
message, its content type and its headers (Retry-After, Allow), the host and token checks keep their rules,
and a real OTLP exporter is refused and taken as it should be. Served by uvicorn as `simulator collect`
serves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.collect_helpers import collector, genai_turns, receiver, tracer, wait_for
from tests.traces_helpers import require

EMPTY = b'{"resourceSpans": []}'
JSON = {"Content-Type": "application/json"}
TEXT = "text/plain; charset=utf-8"


def _answer(response: httpx.Response) -> tuple[int, str, str]:
    return response.status_code, response.headers["content-type"], response.text


@pytest.mark.parametrize(
    ("method", "path", "status", "allow"),
    [
        ("GET", "/v1/traces", 405, "POST"),
        ("PUT", "/v1/logs", 405, "POST"),
        ("POST", "/status", 405, "GET, HEAD"),
        ("GET", "/", 404, None),
        ("POST", "/v1/metrics", 404, None),
        ("GET", "/v1/traces/extra", 404, None),
    ],
)
def test_unknown_routes_and_methods_are_refused_with_their_status(
    tmp_path: Path, method: str, path: str, status: int, allow: str | None
) -> None:
    with receiver(collector(tmp_path / "live")) as url:
        answer = httpx.request(method, f"{url}{path}", content=EMPTY, headers=JSON)
        good = httpx.post(f"{url}/v1/traces", content=EMPTY, headers=JSON)
    assert answer.status_code == status and answer.headers["content-type"] == TEXT
    assert answer.text == ("Method Not Allowed" if status == 405 else "Not Found")
    # Starlette joins the route's method set, so the order of a two-method Allow varies from run to run.
    assert set((answer.headers.get("allow") or "").split(", ")) == set((allow or "").split(", "))
    assert (good.status_code, good.text) == (200, "{}")  # the receiver goes on


@pytest.mark.parametrize(
    ("host", "allowed", "status"),
    [
        ("127.0.0.1", None, 200),
        ("localhost", None, 200),
        ("LOCALHOST:4318", None, 200),
        ("evil.example", None, 400),
        ("evil.example:4318", None, 400),
        ("127.0.0.1.evil.example", None, 400),
        ("[::1]:4318", None, 400),  # not among the loopback names the receiver takes, as before
        ("", None, 400),
        ("evil.example", ["*"], 200),  # a non-loopback bind: any host, the token guards it
    ],
)
def test_only_the_allowed_hosts_are_served(
    tmp_path: Path, host: str, allowed: list[str] | None, status: int
) -> None:
    """A page on another site that resolves its name to 127.0.0.1 (DNS rebinding) cannot post spans."""
    c = collector(tmp_path / "live")
    with receiver(c, allowed_hosts=allowed) as url:
        answer = httpx.post(f"{url}/v1/traces", content=EMPTY, headers={**JSON, "Host": host})
        state = httpx.get(f"{url}/status", headers={"Host": host})
    assert (answer.status_code, state.status_code) == (status, status)
    if status == 400:
        assert _answer(answer) == (400, TEXT, "Invalid host header")


@pytest.mark.parametrize(
    ("how", "status"),
    [
        ({"headers": {"Authorization": "Bearer s3cret"}}, 200),
        ({"params": {"token": "s3cret"}}, 200),
        ({"headers": {"Cookie": "other=1; desk_token=s3cret"}}, 200),
        ({"headers": {"Cookie": 'desk_token="s3cret"'}}, 200),  # quoted, unquoted as Starlette does
        ({"headers": {"Cookie": "desk_token=wrong; desk_token=s3cret"}}, 200),  # the last one counts
        ({"params": [("token", "wrong"), ("token", "s3cret")]}, 200),
        ({"params": [("token", "s3cret"), ("token", "wrong")]}, 401),
        ({"headers": {"Authorization": "Bearer s3cre"}}, 401),
        ({"headers": {"Authorization": "s3cret-and-more"}}, 401),
        ({"params": {"token": ""}}, 401),
        ({"headers": {"Cookie": "desk_token_x=s3cret"}}, 401),
        ({}, 401),
    ],
)
def test_the_token_is_needed_on_every_route(tmp_path: Path, how: dict[str, Any], status: int) -> None:
    with receiver(collector(tmp_path / "live"), token="s3cret", allowed_hosts=["*"]) as url:
        posted = httpx.post(
            f"{url}/v1/traces",
            content=EMPTY,
            headers={**JSON, **how.get("headers", {})},
            params=how.get("params"),
        )
        state = httpx.get(f"{url}/status", headers=how.get("headers"), params=how.get("params"))
    assert (posted.status_code, state.status_code) == (status, status)
    if status == 401:
        assert _answer(posted) == (
            401,
            TEXT,
            "this collector needs its token: send Authorization: Bearer <token>",
        )
    else:
        assert state.headers["content-type"] == "application/json" and "counts" in state.json()


def test_a_real_exporter_is_refused_without_the_token_and_taken_with_it(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    genai_turns(provider, "tok-1", [("hello", "hi, what is wrong?")])
    spans = memory.get_finished_spans()
    c = collector(tmp_path / "live")
    with receiver(c, token="s3cret", allowed_hosts=["*"]) as url:
        refused = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=5).export(spans)
        taken = OTLPSpanExporter(
            endpoint=f"{url}/v1/traces", headers={"Authorization": "Bearer s3cret"}, timeout=5
        ).export(spans)
        wait_for(lambda: c.counts["conversations"] == 1)
    assert (refused, taken) == (SpanExportResult.FAILURE, SpanExportResult.SUCCESS)
    assert c.counts["spans"] == 1


def test_refusals_carry_their_retry_after_and_plain_text(tmp_path: Path) -> None:
    c = collector(tmp_path / "live", rate=1.0, burst=1.0, max_body=100)
    with receiver(c) as url:
        first = httpx.post(f"{url}/v1/traces", content=b"x" * 200, headers=JSON)  # the one token: 413
        limited = httpx.post(f"{url}/v1/traces", content=EMPTY, headers=JSON)
    assert _answer(first) == (413, TEXT, "request body over the limit of 100 bytes; send smaller batches")
    assert _answer(limited) == (429, TEXT, "too many requests from this client; retry later")
    assert int(limited.headers["retry-after"]) >= 1 and "retry-after" not in first.headers


def test_accepted_answers_are_empty_responses_in_the_requests_encoding(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    c = collector(tmp_path / "live")
    with receiver(c) as url:
        provider = tracer(url)
        genai_turns(provider, "enc-1", [("hello", "hi")])
        provider.shutdown()
        as_json = httpx.post(f"{url}/v1/traces", content=EMPTY, headers=JSON)
        as_protobuf = httpx.post(
            f"{url}/v1/traces", content=b"", headers={"Content-Type": "application/x-protobuf"}
        )
        state = httpx.get(f"{url}/status")
        head = httpx.head(f"{url}/status")
        wait_for(lambda: c.counts["conversations"] == 1)
    assert _answer(as_json) == (200, "application/json", "{}")
    assert (as_protobuf.status_code, as_protobuf.headers["content-type"]) == (200, "application/x-protobuf")
    assert ExportTraceServiceResponse.FromString(as_protobuf.content) == ExportTraceServiceResponse()
    assert json.loads(state.text)["counts"]["spans"] == 1 and head.status_code == 200 and not head.content
