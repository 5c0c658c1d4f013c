"""A small triage app on the real `openai` SDK, instrumented by a real GenAI instrumentation (the OpenTelemetry
`openai-v2` one or OpenInference's) in one of its capture modes, talking to the project's fake LLM server.

`run_app(instrumentation, mode)` holds two conversations of three user turns (one with a tool call), and
returns the finished spans and log records exactly as the SDK hands them to its exporters, with the
transcript the app itself held: the reference every import and collect path must give back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.testing.fake_llm import FakeLLMServer
from simulator.testing.fake_llm_behaviour import FakeCall, FakeReply
from tests.traces_helpers import require

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@dataclass(frozen=True)
class Mode:
    """An instrumentation and the settings of one of its capture modes."""

    instrumentation: str  # "openai-v2" or "openinference"
    name: str
    env: dict[str, str]
    content: bool = True  # does this mode record the messages?
    hint: str = ""  # for a content-less mode: the setting the hint must name

    @property
    def id(self) -> str:
        return f"{self.instrumentation}:{self.name}"


# openai-v2 2.4b0 (on opentelemetry-util-genai) takes span_only / event_only / span_and_event; `true`, the
# value older versions took, now means no content at all (it warns and falls back to NO_CONTENT).
V2_CONTENT = [
    Mode("openai-v2", "span_only", {CAPTURE: "span_only"}),
    Mode("openai-v2", "event_only", {CAPTURE: "event_only"}),
    Mode("openai-v2", "span_and_event", {CAPTURE: "span_and_event"}),
]
V2_NO_CONTENT = [
    Mode("openai-v2", "unset", {}, content=False, hint=f"{CAPTURE}=span_only"),
    Mode("openai-v2", "true", {CAPTURE: "true"}, content=False, hint=f"{CAPTURE}=span_only"),
]
OI_CONTENT = [
    Mode("openinference", "default", {}),
    Mode("openinference", "genai_semconv", {"OPENINFERENCE_ENABLE_GENAI_SEMCONV": "true"}),
]
OI_NO_CONTENT = [
    Mode(
        "openinference",
        "hide_inputs",
        {"OPENINFERENCE_HIDE_INPUTS": "true"},
        False,
        "OPENINFERENCE_HIDE_INPUTS",
    ),
    Mode(
        "openinference",
        "hide_input_messages",
        {"OPENINFERENCE_HIDE_INPUT_MESSAGES": "true"},
        False,
        "OPENINFERENCE_HIDE_INPUT_MESSAGES",
    ),
    Mode(
        "openinference",
        "hide_input_text",
        {"OPENINFERENCE_HIDE_INPUT_TEXT": "true"},
        False,
        "OPENINFERENCE_HIDE_INPUT_TEXT",
    ),
    Mode(
        "openinference",
        "hide_outputs",
        {"OPENINFERENCE_HIDE_OUTPUTS": "true"},
        False,
        "OPENINFERENCE_HIDE_OUTPUTS",
    ),
]
CONTENT_MODES = V2_CONTENT + OI_CONTENT
NO_CONTENT_MODES = V2_NO_CONTENT + OI_NO_CONTENT

SYSTEM = "You are a triage nurse. Use the guideline tool when the user asks."
CONVERSATIONS = {
    "conv-chest": ["I have chest pain", "It started an hour ago, please check the guideline", "Thank you"],
    "conv-rash": ["I have a rash on my arm", "Can you check the guideline for rashes", "Okay, bye"],
}
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_guideline",
        "description": "Look up the triage guideline for a symptom.",
        "parameters": {
            "type": "object",
            "properties": {"symptom": {"type": "string"}},
            "required": ["symptom"],
        },
    },
}


def responder(call: FakeCall) -> FakeReply:
    """The scripted model: a tool call when asked to check the guideline, then an answer naming its result."""
    last = call.messages[-1].content if call.messages else ""
    if call.tool_results:
        return FakeReply(text=f"The guideline says: {call.tool_results[-1]['content']}")
    if "guideline" in last:
        return FakeReply(tool_call=("lookup_guideline", {"symptom": last.split()[-1]}))
    return FakeReply(text=f"Noted: {last}. Any other symptoms?")


@dataclass
class AppRun:
    """What the SDK handed its exporters, and the transcript the app held."""

    spans: list[Any]
    logs: list[Any]
    # Each conversation as (speaker, text) turns and its tool calls (name, arguments), in order.
    transcripts: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    tool_calls: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    names = [CAPTURE, *(n for n in os.environ if n.startswith("OPENINFERENCE_")), *values]
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _providers() -> tuple[Any, Any, Any, Any]:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    resource = Resource.create({"service.name": "triage-app"})
    tracer_provider, spans = TracerProvider(resource=resource), InMemorySpanExporter()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider, logs = LoggerProvider(resource=resource), InMemoryLogRecordExporter()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    return tracer_provider, spans, logger_provider, logs


def _instrumentor(instrumentation: str) -> Any:
    if instrumentation == "openai-v2":
        return require("opentelemetry.instrumentation.openai_v2").OpenAIInstrumentor()
    return require("openinference.instrumentation.openai").OpenAIInstrumentor()


def _session(instrumentation: str, tracer: Any, key: str) -> Any:
    """Where the conversation id goes: the app's own request span (`gen_ai.conversation.id`) under openai-v2,
    OpenInference's `using_session` (`session.id` on its spans) under OpenInference."""
    if instrumentation == "openinference":
        return require("openinference.instrumentation").using_session(key)
    span = tracer.start_as_current_span("POST /chat", attributes={"gen_ai.conversation.id": key})
    return span


def run_app(mode: Mode, conversations: dict[str, list[str]] | None = None) -> AppRun:
    """Hold the conversations (the two of CONVERSATIONS unless given) with the instrumentation on in
    `mode`; the spans and logs it made."""
    require("opentelemetry.sdk")
    import openai

    tracer_provider, span_exporter, logger_provider, log_exporter = _providers()
    instrumentor = _instrumentor(mode.instrumentation)
    run = AppRun([], [])
    with _environment(mode.env):
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        try:
            with FakeLLMServer(responder) as server:
                client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
                tracer = tracer_provider.get_tracer("triage-app")
                for key, user_turns in (conversations or CONVERSATIONS).items():
                    _converse(
                        client, lambda k=key: _session(mode.instrumentation, tracer, k), key, user_turns, run
                    )
        finally:
            instrumentor.uninstrument()
    tracer_provider.force_flush()
    logger_provider.force_flush()
    run.spans = list(span_exporter.get_finished_spans())
    run.logs = list(log_exporter.get_finished_logs())
    return run


def _converse(client: Any, session: Any, key: str, user_turns: list[str], run: AppRun) -> None:
    """One conversation, one user turn a request: the history is sent again each time, as apps do."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    transcript: list[tuple[str, str]] = []
    calls: list[tuple[str, dict[str, Any]]] = []
    for text in user_turns:
        messages.append({"role": "user", "content": text})
        transcript.append(("user", text))
        with session():
            answer = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[TOOL])
            reply = answer.choices[0].message
            while reply.tool_calls:
                messages.append(reply.model_dump(exclude_none=True))
                for tool_call in reply.tool_calls:
                    arguments = json.loads(tool_call.function.arguments)
                    calls.append((tool_call.function.name, arguments))
                    result = f"see a doctor today about {arguments['symptom']}"
                    messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": result})
                answer = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[TOOL])
                reply = answer.choices[0].message
        messages.append({"role": "assistant", "content": reply.content})
        transcript.append(("bot", reply.content or ""))
    run.transcripts[key] = transcript
    run.tool_calls[key] = calls


# ---------------------------------------------------------------------------------- what exporters send


def json_lines(run: AppRun, path: Path) -> Path:
    """The spans and then the logs as the OTLP JSON file exporter writes them (one request a line), through
    the OpenTelemetry JSON encoder (`opentelemetry-exporter-otlp-json-common`) that exporter uses."""
    traces_encoder = require("opentelemetry.exporter.otlp.json.common.trace_encoder")
    logs_encoder = require("opentelemetry.exporter.otlp.json.common._log_encoder")
    lines = [json.dumps(traces_encoder.encode_spans(run.spans).to_dict(), separators=(",", ":"))]
    if run.logs:
        lines.append(json.dumps(logs_encoder.encode_logs(run.logs).to_dict(), separators=(",", ":")))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def json_bodies(run: AppRun) -> list[tuple[str, bytes]]:
    """(path, body) of the OTLP/HTTP JSON requests the JSON exporter sends: `encode_*(...).to_json()`."""
    traces_encoder = require("opentelemetry.exporter.otlp.json.common.trace_encoder")
    logs_encoder = require("opentelemetry.exporter.otlp.json.common._log_encoder")
    bodies = [("/v1/traces", traces_encoder.encode_spans(run.spans).to_json().encode())]
    if run.logs:
        bodies.append(("/v1/logs", logs_encoder.encode_logs(run.logs).to_json().encode()))
    return bodies


def export_protobuf(run: AppRun, url: str) -> None:
    """The spans and logs through the real OTLP/HTTP protobuf exporters (gzip), as a service sends them."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs.export import LogRecordExportResult
    from opentelemetry.sdk.trace.export import SpanExportResult

    spans = OTLPSpanExporter(endpoint=f"{url}/v1/traces", compression=Compression.Gzip, timeout=10)
    assert spans.export(run.spans) == SpanExportResult.SUCCESS
    if run.logs:
        logs = OTLPLogExporter(endpoint=f"{url}/v1/logs", compression=Compression.Gzip, timeout=10)
        assert logs.export(run.logs) == LogRecordExportResult.SUCCESS
