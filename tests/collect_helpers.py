"""Shared helpers for the collector's tests: a receiver on loopback, real OTel SDK exporters, spans."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simulator.collect.receiver import create_receiver
from simulator.collect.service import CollectOptions, Collector
from tests.support.waiting import until
from tests.traces_helpers import require

SECRET_EMAIL = "jane.secret@example.org"
SECRET_NHS = "943 476 5919"  # passes the NHS modulus-11 check


@contextmanager
def receiver(collector: Collector, **kwargs: Any) -> Iterator[str]:
    """The collector's receiver served by uvicorn on a free loopback port; yields its base URL."""
    import uvicorn

    from simulator.collect.connections import server_config

    serving = {k: kwargs.pop(k) for k in ("read_timeout", "max_connections") if k in kwargs}
    app = create_receiver(collector, tick_s=kwargs.pop("tick_s", 0.1), **kwargs)
    server = uvicorn.Server(server_config(app, "127.0.0.1", 0, **serving))  # as `collect` serves it
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a hang, not a busy machine
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the receiver did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


def collector(out: Path, **fields: Any) -> Collector:
    fields.setdefault("idle_s", 0.3)
    fields.setdefault("fsync", False)
    return Collector(CollectOptions(out=out, **fields))


def tracer(url: str, *, gzip: bool = True, headers: dict[str, str] | None = None) -> Any:
    """A real SDK tracer exporting each span at once through the real OTLP/HTTP protobuf exporter."""
    require("opentelemetry.sdk")
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "triage-web"}))
    exporter = OTLPSpanExporter(
        endpoint=f"{url}/v1/traces",
        compression=Compression.Gzip if gzip else Compression.NoCompression,
        headers=headers,
        timeout=10,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def genai_turns(provider: Any, key: str, turns: list[tuple[str, str]], **extra: Any) -> None:
    """One conversation as GenAI chat spans, each repeating the history (as instrumentations do)."""
    trace = provider.get_tracer("triage-web")
    history: list[dict[str, Any]] = []
    for user, bot in turns:
        history.append(text("user", user))
        with trace.start_as_current_span("chat triage-bot") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.conversation.id", key)
            span.set_attribute("gen_ai.input.messages", json.dumps(history))
            span.set_attribute("gen_ai.output.messages", json.dumps([text("assistant", bot)]))
            for name, value in extra.items():
                span.set_attribute(name, value)
        history.append(text("assistant", bot))


def records(out: Path) -> list[Any]:
    from simulator.collect.folders import collected_folders
    from simulator.record.folder import RunFolder

    return [r for f in collected_folders(out) for r in RunFolder.open(f).conversations()]


def wait_for(predicate: Any, what: str = "the collector") -> None:
    until(predicate, what)
