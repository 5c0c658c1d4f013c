"""The demo triage bot as a tiny web service, instrumented with the real OpenTelemetry SDK.

`POST /chat` with JSON `{"conversation_id", "message", "user_id"?}` answers `{"messages": [...]}`. Every
bot turn is one GenAI `chat` span (`gen_ai.conversation.id`, the history in `gen_ai.input.messages`, the
reply in `gen_ai.output.messages`), exported by the standard OTLP/HTTP exporter, batched, to
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (e.g. `simulator collect`'s `http://127.0.0.1:4318/v1/traces`).

`POST /admin/version {"version": "v2"}` swaps in a changed bot for new conversations: v2 "helpfully" names
a likely diagnosis, which the suite's `no-diagnosis-no-prescribing` criterion forbids (the planted drift of
the demo, docs/collect.md). A demonstration, not a medical device.

    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces \\
        python -m examples.live.triage_web --port 8080

(`uvicorn examples.live.triage_web:app --port 8080` serves it too, with uvicorn's own words for a port
already taken.)
"""

from __future__ import annotations

__all__ = ["DIAGNOSIS", "TriageWeb", "create_app", "default_provider", "main"]

import argparse
import json
import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from examples.triage_bot import TriageBot, make_bot
from simulator.listening import exit_on_unlistenable, listening_socket

MAX_CONVERSATIONS = 10_000
DIAGNOSIS = "It sounds like you have a viral infection."


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


class TriageWeb:
    """Conversations (bot and history) by id, the bot version for new ones, and the tracer."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("examples.live.triage_web")
        self.version = "v1"
        self.conversations: OrderedDict[str, tuple[TriageBot, list[dict[str, Any]], str]] = OrderedDict()
        self.lock = threading.Lock()

    def _conversation(self, key: str) -> tuple[TriageBot, list[dict[str, Any]], str]:
        with self.lock:
            if key not in self.conversations:
                self.conversations[key] = (make_bot(), [], self.version)
                while len(self.conversations) > MAX_CONVERSATIONS:
                    self.conversations.popitem(last=False)
            return self.conversations[key]

    def reply(self, key: str, message: str, user_id: str | None = None) -> list[str]:
        """One bot turn, traced as a GenAI chat span."""
        bot, history, version = self._conversation(key)
        history.append(_text("user", message))
        with self.tracer.start_as_current_span("chat triage-bot") as span:
            replies = bot.send(message)
            if version == "v2" and bot.final_state() is not None and len(history) > 2:
                replies = [DIAGNOSIS, *replies]
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "rules")
            span.set_attribute("gen_ai.request.model", f"triage-bot-{version}")
            span.set_attribute("gen_ai.conversation.id", key)
            span.set_attribute("gen_ai.input.messages", json.dumps(history))
            span.set_attribute("gen_ai.output.messages", json.dumps([_text("assistant", r) for r in replies]))
            if user_id:
                span.set_attribute("user.id", user_id)
        history.extend(_text("assistant", r) for r in replies)
        return replies


def default_provider(endpoint: str | None = None) -> Any:
    """A TracerProvider with the standard OTLP/HTTP protobuf exporter behind a batch processor."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "triage-web"}))
    exporter = OTLPSpanExporter(endpoint=endpoint, compression=Compression.Gzip)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=20_000, schedule_delay_millis=200)
    )
    return provider


def create_app(web: TriageWeb) -> Starlette:
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        key, message = str(body.get("conversation_id") or ""), str(body.get("message") or "")
        if not key or not message:
            return JSONResponse({"error": "send conversation_id and message"}, 400)
        return JSONResponse({"messages": web.reply(key, message, body.get("user_id"))})

    async def version(request: Request) -> JSONResponse:
        body = await request.json()
        if body.get("version") not in ("v1", "v2"):
            return JSONResponse({"error": "version is v1 or v2"}, 400)
        web.version = body["version"]
        return JSONResponse({"version": web.version})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        web.provider.shutdown()  # exports what is still batched

    return Starlette(
        routes=[Route("/chat", chat, methods=["POST"]), Route("/admin/version", version, methods=["POST"])],
        lifespan=lifespan,
    )


def _default_app() -> Starlette:
    return create_app(TriageWeb(default_provider(os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))))


def __getattr__(name: str) -> Any:
    if name == "app":  # `uvicorn examples.live.triage_web:app`: built on first use, not on import
        return _default_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    """Command line: serve the app until Ctrl-C."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    with exit_on_unlistenable():  # a port already taken: one line with the fix, exit code 2
        sock = listening_socket(args.host, args.port)
    print(f"triage web app listening on http://{args.host}:{sock.getsockname()[1]}/chat", flush=True)
    uvicorn.Server(uvicorn.Config(_default_app(), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
