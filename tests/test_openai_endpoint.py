"""The openai_endpoint adapter: a bot that is a model server with its own tools, through the real `openai`
SDK pointed at the project's fake server; the tool calls it returns are recorded as tool_call parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.bots.base import BotError
from simulator.bots.openai_endpoint import OpenAIEndpointFactory
from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig
from simulator.errors import UserError
from simulator.record.parts import TextPart, ToolCallPart, part_text
from simulator.record.redact import forget_secrets, redact
from simulator.testing import FakeCall, FakeLLMServer, FakeReply

LOOKUP = {
    "name": "lookup_service",
    "description": "Find the nearest service for a need.",
    "parameters": {"type": "object", "properties": {"need": {"type": "string"}}, "required": ["need"]},
}
DECIDE = {
    "name": "record_decision",
    "description": "Record the triage level.",
    "parameters": {"type": "object", "properties": {"triage_level": {"type": "string"}}},
}


def triage_model(call: FakeCall) -> FakeReply | str:
    """A scripted model server: looks the service up, then answers from the result; records its decision."""
    last = call.messages[-1].content
    if "loop" in call.messages[0].content:  # a server stuck asking for the same tool
        return FakeReply(tool_call=("lookup_service", {"need": "again"}))
    if last.startswith("[tool_result]") and "A&E" in last:
        return FakeReply(
            text="Please go to A&E now.", tool_call=("record_decision", {"triage_level": "emergency"})
        )
    if last.startswith("[tool_result]"):
        return "I could not find a service; please call 111."
    if "chest" in last:
        return FakeReply(tool_call=("lookup_service", {"need": "emergency"}))
    return "How can I help?"


def _factory(fake: FakeLLMServer, tmp_path: Path, **config: object) -> OpenAIEndpointFactory:
    settings = {"tools": [LOOKUP, DECIDE], "state_tool": "record_decision", **config}
    return OpenAIEndpointFactory(
        OpenAIEndpointBotConfig(base_url=fake.openai_base_url, model="team-triage-ft", **settings),  # type: ignore[arg-type]
        tmp_path,
    )


async def test_tool_calls_are_recorded_as_parts_with_their_results_and_the_decision(tmp_path: Path) -> None:
    async with FakeLLMServer(responder=triage_model) as fake:
        factory = _factory(
            fake, tmp_path, tool_results={"lookup_service": {"service": "A&E", "distance_km": 2}}
        )
        session = await factory.open("run/x#0/1")
        reply = await session.send("I have chest pain", 0)
        await factory.aclose()
    lookup, decision, words = reply.parts
    assert isinstance(lookup, ToolCallPart) and lookup.name == "lookup_service"
    assert lookup.arguments == {"need": "emergency"} and lookup.result == {"service": "A&E", "distance_km": 2}
    assert lookup.id and lookup.side == "bot" and lookup.error is None
    assert isinstance(decision, ToolCallPart) and decision.arguments == {"triage_level": "emergency"}
    assert isinstance(words, TextPart) and words.text == "Please go to A&E now."
    assert reply.messages == ["Please go to A&E now."] and await session.final_state() == {
        "triage_level": "emergency"
    }
    assert part_text(lookup).startswith(
        '[tool call] lookup_service {"need": "emergency"} -> {"distance_km": 2'
    )
    # What the server saw: the tools offered, then the tool result sent back in the second request.
    first, second = fake.calls
    assert [t["name"] for t in first.tools] == ["lookup_service", "record_decision"]
    assert second.messages[-1].content.startswith("[tool_result]") and "A&E" in second.messages[-1].content
    assert reply.usage is not None and reply.usage.calls == 2 and reply.model == "team-triage-ft"


async def test_a_tool_without_a_canned_result_is_an_error_part_and_the_history_stays_valid(
    tmp_path: Path,
) -> None:
    async with FakeLLMServer(responder=triage_model) as fake:
        factory = _factory(fake, tmp_path)
        session = await factory.open("run/x#0/1")
        first = await session.send("chest pain again", 0)
        second = await session.send("thanks", 1)
        await factory.aclose()
    call = first.parts[0]
    assert isinstance(call, ToolCallPart) and call.result is None
    assert call.error is not None and "bot.tool_results.lookup_service" in call.error
    assert first.messages == ["I could not find a service; please call 111."]
    assert second.messages == ["How can I help?"]
    # Every request after a tool call carries the assistant's tool call and its answer, in order.
    assert "[tool_call lookup_service]" in fake.calls[2].messages[1].content
    assert fake.calls[2].messages[2].content.startswith("[tool_result]")


async def test_a_server_that_keeps_asking_for_tools_is_a_bot_error(tmp_path: Path) -> None:
    async with FakeLLMServer(responder=triage_model) as fake:
        factory = _factory(fake, tmp_path, max_tool_rounds=2)
        session = await factory.open("run/x#0/1")
        with pytest.raises(BotError, match="after 2 rounds") as caught:
            await session.send("loop", 0)
        await factory.aclose()
    assert caught.value.kind == "tool_loop" and len(fake.calls) == 3


async def test_server_errors_are_bot_errors_and_the_key_is_sent_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_MODEL_KEY", "sk-team-model-secret")
    try:
        async with FakeLLMServer(responder=lambda call: FakeReply(status=500, text="model crashed")) as fake:
            factory = _factory(fake, tmp_path, api_key_env="TEAM_MODEL_KEY")
            session = await factory.open("run/x#0/1")
            with pytest.raises(BotError, match="HTTP 500") as caught:
                await session.send("hello", 0)
            await factory.aclose()
        assert caught.value.kind == "http_status"
        assert fake.calls[0].headers["authorization"] == "Bearer sk-team-model-secret"
        assert redact("key sk-team-model-secret") == "key [redacted]"
    finally:
        forget_secrets()
    monkeypatch.delenv("TEAM_MODEL_KEY")
    with pytest.raises(UserError, match="TEAM_MODEL_KEY, which is not set"):
        _factory(fake, tmp_path, api_key_env="TEAM_MODEL_KEY")


async def test_a_suite_run_records_the_servers_tool_calls_in_the_transcript(tmp_path: Path) -> None:
    from simulator.config.factors import suite_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite
    from simulator.record.folder import RunFolder

    root = Path(__file__).resolve().parent.parent
    async with FakeLLMServer(responder=triage_model) as fake:
        suite_file = tmp_path / "suite.yaml"
        suite_file.write_text(
            f"""
scenarios: {{paths: ["{root}/scenarios/triage/chest-pain-vague-01.yaml"]}}
bot:
  type: openai_endpoint
  base_url: {fake.openai_base_url}
  model: team-triage-ft
  system_prompt: You are a triage assistant.
  tools: [{{name: lookup_service, parameters: {{type: object}}}}, {{name: record_decision}}]
  tool_results: {{lookup_service: {{service: "A&E"}}}}
  state_tool: record_decision
user: {{model: offline, vocabulary: {root}/examples/triage_vocabulary.yaml}}
outcome: {{key: triage_level, levels: [self_care, gp, urgent, emergency]}}
""",
            encoding="utf-8",
        )
        suite = load_suite(suite_file)
        result = await run_suite(
            suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False)
        )
    assert result.errors == 0
    [record] = list(RunFolder.open(tmp_path / "run").conversations())
    calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart)]
    assert [c.name for c in calls] == ["lookup_service", "record_decision"]
    assert calls[0].result == {"service": "A&E"} and record.final_state == {"triage_level": "emergency"}
    assert fake.calls[0].system == "You are a triage assistant."
