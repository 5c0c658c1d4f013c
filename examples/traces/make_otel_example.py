"""Write `otel_traces.json`: a small OTLP JSON export of triage conversations, made with the real
OpenTelemetry SDK the way an instrumented chatbot emits GenAI spans.

Three conversations use the current conventions (`gen_ai.input.messages` / `gen_ai.output.messages` /
`gen_ai.system_instructions` on each `chat` span, each span repeating the history); one uses the older
per-message events (`gen_ai.user.message`, `gen_ai.choice`, ...). Each conversation's last span carries the
disposition the service's nurse gave on review, `app.nurse_disposition` (its expected level:
`simulator import --expected-attribute app.nurse_disposition`). Run: `python examples/traces/make_otel_example.py`.
The names, numbers and dates in it are invented, and `simulator import` redacts them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from simulator.traces.otlp_json import spans_to_json

SYSTEM = "You are a nurse triage assistant. Ask about red flags, then call record_decision."
START_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
MODEL = "gpt-4o-mini"

# Each conversation: (id, [(user message, assistant reply, decision or None)]).
CONVERSATIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "conv-1001",
        [
            (
                "hi, my name is Jane Doe, I've had a crushing pain in my chest for an hour and it goes into my left arm",
                "Does the pain spread to your jaw, or are you sweaty or short of breath?",
            ),
            (
                "yes I'm sweaty and a bit breathless. my number is 07700 900123",
                "This could be a heart attack. Call 999 now and chew an aspirin if you are not allergic.",
            ),
        ],
    ),
    (
        "conv-1002",
        [
            ("sore throat", "How long have you had it, and do you have a fever?"),
            ("3 days, no fever", "Can you swallow fluids normally?"),
            (
                "yes",
                "This sounds like a viral sore throat. Rest, fluids and paracetamol; see a pharmacist if it lasts over a week.",
            ),
        ],
    ),
    (
        "conv-1003",
        [
            (
                "my son is 4 and has a fever of 39.5 with a rash that doesn't fade when I press a glass on it. born 12/03/2021",
                "A rash that does not fade under a glass with a fever needs emergency care. Call 999 now.",
            ),
        ],
    ),
]
DECISIONS = {"conv-1001": "emergency", "conv-1002": "self_care", "conv-1003": "emergency"}
# The nurse who reviewed each conversation wrote back the level it needed onto its last span.
NURSE_ATTRIBUTE = "app.nurse_disposition"
NURSE = {
    "conv-1001": "emergency",
    "conv-1002": "self_care",
    "conv-1003": "emergency",
    "conv-1004": "self_care",
}
OLD_STYLE = (
    "conv-1004",
    [
        (
            "twisted my ankle playing football, can walk on it",
            "Rest, ice and elevate it; see your GP if you cannot bear weight after 2 days.",
        )
    ],
)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat_span(
    tracer: Any,
    conversation: str,
    history: list[dict[str, Any]],
    output: list[dict[str, Any]],
    at: int,
    extra: dict[str, str] | None = None,
) -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.conversation.id": conversation,
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
        "gen_ai.input.messages": json.dumps(history),
        "gen_ai.output.messages": json.dumps(output),
        **(extra or {}),
    }
    span = tracer.start_span(f"chat {MODEL}", start_time=at, attributes=attributes)
    span.end(end_time=at + 900_000_000)


def new_style(tracer: Any, conversation: str, turns: list[tuple[str, str]], at: int) -> int:
    history: list[dict[str, Any]] = []
    for user, reply in turns:
        history.append(_text("user", user))
        output = [{**_text("assistant", reply), "finish_reason": "stop"}]
        _chat_span(tracer, conversation, history, output, at)
        history = history + output
        at += 60_000_000_000
    decision = DECISIONS[conversation]
    call = {
        "type": "tool_call",
        "id": f"call-{conversation}",
        "name": "record_decision",
        "arguments": {"triage_level": decision},
    }
    output = [{"role": "assistant", "parts": [call], "finish_reason": "tool_call"}]
    _chat_span(tracer, conversation, history, output, at, {NURSE_ATTRIBUTE: NURSE[conversation]})
    return at + 60_000_000_000


def old_style(tracer: Any, conversation: str, turns: list[tuple[str, str]], at: int) -> None:
    """The older representation: one event per message on the span (no conversation id: the trace groups it)."""
    for user, reply in turns:
        span = tracer.start_span(
            f"chat {MODEL}",
            start_time=at,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": MODEL,
            },
        )
        span.add_event("gen_ai.system.message", {"content": SYSTEM}, timestamp=at)
        span.add_event("gen_ai.user.message", {"content": user}, timestamp=at)
        body = json.dumps(
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}
        )
        span.add_event("gen_ai.choice", {"gen_ai.event.content": body}, timestamp=at + 800_000_000)
        span.end(end_time=at + 900_000_000)
        at += 60_000_000_000


def main(out: Path | None = None) -> Path:
    out = out or Path(__file__).with_name("otel_traces.json")
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "triage-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("triage-bot")
    at = START_NS
    for conversation, turns in CONVERSATIONS:
        at = new_style(tracer, conversation, turns, at)
    with trace.use_span(
        tracer.start_span("invoke_agent triage-bot", start_time=at), end_on_exit=False
    ) as root:
        old_style(tracer, *OLD_STYLE, at)
        root.set_attribute(NURSE_ATTRIBUTE, NURSE[OLD_STYLE[0]])
        root.end(end_time=at + 120_000_000_000)
    provider.shutdown()
    out.write_text(
        json.dumps(spans_to_json(exporter.get_finished_spans()), indent=1) + "\n", encoding="utf-8"
    )
    return out


if __name__ == "__main__":
    print(f"wrote {main()}")
