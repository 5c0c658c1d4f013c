"""Planted conversations with a known expected level and a known advice, for the expected-level tests
(tests/test_expected_levels.py): OTel traces made with the real OpenTelemetry SDK, as a service exports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The advice the bot gives for each level, in words the triage vocabulary reads (examples/triage_vocabulary.yaml).
ADVICE = {
    "self_care": "You can look after yourself at home with rest and fluids.",
    "gp": "Please book a GP appointment this week.",
    "urgent": "You need to be seen today at an urgent treatment centre.",
    "emergency": "Call 999 now.",
}
LEVELS = ["self_care", "gp", "urgent", "emergency"]
# (conversation, what the patient says, the level it needed, the level the bot advised). conv-b says chest
# pain (a red flag: at least emergency), but a clinician's level is gp: an exact level outranks the floor.
PLANTED = [
    ("conv-a", "I have a cough and a runny nose", "self_care", "self_care"),
    ("conv-b", "a sharp chest pain when I press on my rib after lifting boxes", "gp", "gp"),
    ("conv-c", "my throat hurts and I have a temperature", "gp", "emergency"),  # over
    ("conv-d", "my arm has been numb since this morning", "emergency", "gp"),  # under
    ("conv-e", "I cut my finger, it is still bleeding a little", "self_care", "urgent"),  # over
    ("conv-f", "I have had diarrhoea for two days", "urgent", "self_care"),  # under
    ("conv-g", "my back aches after gardening", "self_care", "self_care"),
]
UNDER = {c for c, _, e, a in PLANTED if LEVELS.index(a) < LEVELS.index(e)}
OVER = {c for c, _, e, a in PLANTED if LEVELS.index(a) > LEVELS.index(e)}


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def otel_file(
    path: Path, attribute: str | None = "triage.expected_level", values: dict[str, str] | None = None
) -> Path:
    """The planted conversations as an OTLP JSON export made by the real SDK: two chat spans each, the
    expected level (where `attribute` is given; `values` overrides it per conversation) set on the last span
    only, as a nurse's later disposition."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from simulator.traces.otlp_json import spans_to_json

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "triage-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("triage-bot")
    at = 1_767_225_600_000_000_000
    for key, said, expected, advised in PLANTED:
        turns = [(said, "How long has this been going on?"), ("since yesterday", ADVICE[advised])]
        history: list[dict[str, Any]] = []
        for index, (user, bot) in enumerate(turns):
            history.append(_text("user", user))
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.conversation.id": key,
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([_text("assistant", bot)]),
            }
            if attribute is not None and index == len(turns) - 1:
                attributes[attribute] = (values or {}).get(key, expected)
            span = tracer.start_span("chat triage-bot", start_time=at, attributes=attributes)
            span.end(end_time=at + 500_000_000)
            history.append(_text("assistant", bot))
            at += 60_000_000_000
    provider.shutdown()
    path.write_text(json.dumps(spans_to_json(exporter.get_finished_spans())) + "\n", encoding="utf-8")
    return path
