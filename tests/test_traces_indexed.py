"""OpenInference (`llm.input_messages.{i}.message.*`) and Traceloop/OpenLLMetry (`gen_ai.prompt.{i}.*`)
spans: read by the one trace reader, so `simulator import` and `simulator collect` both take them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.record.folder import RunFolder
from simulator.traces.indexed import indexed_messages
from tests.collect_helpers import collector, receiver, records, tracer, wait_for
from tests.traces_helpers import cli, require

TURNS = [("I feel dizzy", "When did it start?"), ("this morning", "Please call 111 now.")]


def openinference(history: list[tuple[str, str]], bot: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "session.id": "oi-1",
    }
    for i, (role, content) in enumerate(history):
        attrs[f"llm.input_messages.{i}.message.role"] = role
        attrs[f"llm.input_messages.{i}.message.content"] = content
    attrs["llm.output_messages.0.message.role"] = "assistant"
    attrs["llm.output_messages.0.message.content"] = bot
    return attrs


def traceloop(history: list[tuple[str, str]], bot: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "tl-1",
    }
    for i, (role, content) in enumerate(history):
        attrs[f"gen_ai.prompt.{i}.role"] = role
        attrs[f"gen_ai.prompt.{i}.content"] = content
    attrs["gen_ai.completion.0.role"] = "assistant"
    attrs["gen_ai.completion.0.content"] = bot
    attrs["gen_ai.completion.0.finish_reason"] = "stop"
    return attrs


def emit(provider: Any, make: Any) -> None:
    trace = provider.get_tracer("indexed")
    history: list[tuple[str, str]] = [("system", "You are a triage nurse.")]
    for user, bot in TURNS:
        history.append(("user", user))
        with trace.start_as_current_span("llm") as span:
            for key, value in make(history, bot).items():
                span.set_attribute(key, value)
        history.append(("assistant", bot))


@pytest.mark.parametrize(
    ("make", "key", "model"), [(openinference, "oi-1", "gpt-4o-mini"), (traceloop, "tl-1", "openai:gpt-4o")]
)
def test_indexed_spans_through_the_real_exporter(tmp_path: Path, make: Any, key: str, model: str) -> None:
    c = collector(tmp_path / "live")
    with receiver(c) as url:
        provider = tracer(url)
        emit(provider, make)
        provider.shutdown()
        wait_for(lambda: c.counts["conversations"] == 1)
    (record,) = records(tmp_path / "live")
    assert record.bot_conversation_id == key and record.bot == model
    assert [(t.role, t.text) for t in record.turns] == [
        ("user", "I feel dizzy"), ("bot", "When did it start?"), ("user", "this morning"), ("bot", "Please call 111 now."),
    ]  # fmt: skip
    assert record.turns[0].raw["system_instructions"] == ["You are a triage nurse."]


@pytest.mark.parametrize("make", [openinference, traceloop])
def test_simulator_import_reads_the_same_attributes(tmp_path: Path, make: Any) -> None:
    require("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from simulator.traces.otlp_json import spans_to_json

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    emit(provider, make)
    source = tmp_path / "traces.json"
    source.write_text(json.dumps(spans_to_json(memory.get_finished_spans())))
    assert cli("import", source, "--out", tmp_path / "run") == 0
    (record,) = RunFolder.open(tmp_path / "run").conversations()
    assert [t.text for t in record.turns] == [m for pair in TURNS for m in pair]


def test_tool_calls_multipart_contents_and_tool_results() -> None:
    attrs = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": "part one",
        "llm.input_messages.0.message.contents.1.message_content.text": "part two",
        "llm.input_messages.1.message.role": "tool",
        "llm.input_messages.1.message.tool_call_id": "c1",
        "llm.input_messages.1.message.content": "slot booked",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c2",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "record_decision",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"triage_level": "gp"}',
        "gen_ai.completion.0.tool_calls.0.name": "lookup",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"q": 1}',
    }
    inputs, outputs = indexed_messages(attrs)
    assert [p["content"] for p in inputs[0].parts] == ["part one", "part two"]
    assert inputs[1].parts == [{"type": "tool_call_response", "id": "c1", "response": "slot booked"}]
    assert outputs[0].parts == [
        {"type": "tool_call", "id": "c2", "name": "record_decision", "arguments": {"triage_level": "gp"}}
    ]
    assert (
        outputs[1].role == "assistant" and outputs[1].parts[0]["name"] == "lookup"
    )  # Traceloop: role defaults


def test_an_indexed_message_without_a_role_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"llm.input_messages.0 has no role"):
        indexed_messages({"llm.input_messages.0.message.content": "hi"})
    # Text that merely looks like JSON stays text.
    inputs, _ = indexed_messages({"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "[urgent] null"})
    assert inputs[0].parts == [{"type": "text", "content": "[urgent] null"}]
