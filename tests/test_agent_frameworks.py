"""Tool-using agents on a real agent framework against the simulated world: a pydantic-ai agent (its model
the project's fake LLM server) behind the `http` adapter, taking its tools from the loopback endpoint or from
the engine's per-conversation MCP server (the official `mcp` SDK), its calls recorded as parts and checked
with the final state like any other bot's (issue 38)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from simulator.bots.env_mcp import EnvironmentMCPServer
from simulator.bots.environment import make_environment
from simulator.config.suite import load_suite
from simulator.record.parts import ToolCallPart
from simulator.testing import FakeCall, FakeLLMServer, FakeReply
from tests.bots.pydantic_ai_agent_bot import AgentBot, AgentEndpoint, serve

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "examples" / "clinic_env" / "scenarios" / "registered-urgent-fever.yaml"


def agent_model(call: FakeCall) -> FakeReply | str:
    """The agent's model: look Ben up, book urgent (`sloppy` books for a patient id that does not exist and
    then claims it booked), answer."""
    last = call.messages[-1].content
    sloppy = call.model == "sloppy"
    if last.startswith("[tool_result]") and "P002" in last and "slot" not in last:
        patient = "P999" if sloppy else "P002"
        return FakeReply(
            tool_call=("book_appointment", {"patient_id": patient, "service": "GP", "urgency": "urgent"})
        )
    if last.startswith("[tool_result]"):
        return "I've booked you an urgent appointment today."
    if any(m.content.startswith("[tool_result]") for m in call.messages):
        return "You're welcome; take care."
    return FakeReply(tool_call=("lookup_patient", {"name": "Ben Okafor"}))


def _suite(tmp_path: Path, bot_url: str, mcp: bool) -> Path:
    text = (ROOT / "examples" / "clinic_env" / "suite.yaml").read_text(encoding="utf-8")
    head, rest = text.split("bot:\n", 1)
    head = head.replace('paths: ["scenarios"]', f'paths: ["{SCENARIO}"]')
    bot = f"bot:\n  type: http\n  url: {bot_url}\n  environment_mcp: {str(mcp).lower()}\n"
    path = tmp_path / "suite.yaml"
    path.write_text(head + bot + "user:\n" + rest.split("user:\n", 1)[1], encoding="utf-8")
    return path


async def _run(tmp_path: Path, tools_from: str, model: str = "careful") -> tuple[Any, dict[str, str]]:
    from simulator.config.factors import suite_scenarios
    from simulator.engine.runner import RunOptions, run_suite
    from simulator.record.folder import RunFolder

    async with FakeLLMServer(responder=agent_model) as fake:
        bot = AgentBot(fake.openai_base_url, model, tools_from)  # type: ignore[arg-type]
        async with serve(bot) as url:
            suite = load_suite(_suite(tmp_path, url, mcp=tools_from == "mcp"))
            result = await run_suite(
                suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False)
            )
    assert result.errors == 0
    folder = RunFolder.open(tmp_path / "run")
    [record] = list(folder.conversations())
    return record, {v.criterion_id: v.result for v in folder.verdicts()}


@pytest.mark.parametrize("tools_from", ["http", "mcp"])
async def test_a_pydantic_ai_agent_acts_on_the_world_and_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tools_from: str
) -> None:
    monkeypatch.chdir(ROOT)  # the clinic's tool functions: examples.clinic_env.tools
    record, verdicts = await _run(tmp_path, tools_from)
    calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart) and p.side == "bot"]
    assert [c.name for c in calls] == ["lookup_patient", "book_appointment"]
    assert calls[0].arguments == {"name": "Ben Okafor"} and calls[0].result["id"] == "P002"
    assert calls[1].result["urgency"] == "urgent" and calls[1].error is None
    assert record.environment_state["appointments"][0]["patient_id"] == "P002"
    assert verdicts["environment.appointments[0].urgency"] == "pass"
    assert verdicts["environment.appointments[0].patient_id"] == "pass"
    assert verdicts["claim.booked"] == "pass"


async def test_an_agents_failed_call_over_mcp_is_data_and_its_false_claim_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    record, verdicts = await _run(tmp_path, "mcp", model="sloppy")
    calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart) and p.side == "bot"]
    assert [c.name for c in calls] == ["lookup_patient", "book_appointment"]
    assert calls[1].error is not None and "P999" in calls[1].error  # the world refused; the record keeps it
    assert record.environment_state["appointments"] == []
    assert verdicts["environment.appointments[0].urgency"] == "fail"
    assert verdicts["claim.booked"] == "fail"  # "I've booked you" with no booking made


async def test_the_mcp_server_serves_each_conversation_its_own_world(monkeypatch: pytest.MonkeyPatch) -> None:
    """Driven by the `mcp` SDK's own client: tools/list has the suite's schemas, tools/call acts on that
    conversation's state only and is recorded; a failed call is `isError`; an unknown endpoint is a 404."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    monkeypatch.chdir(ROOT)
    spec = load_suite(ROOT / "examples" / "clinic_env" / "suite.yaml").environment
    first, second = make_environment(spec, {}, "run/a#0/1"), make_environment(spec, {}, "run/b#0/1")
    assert first is not None and second is not None
    server = EnvironmentMCPServer()
    opened = await asyncio.gather(server.start(), server.start())
    assert opened[0] == opened[1] and opened[0].startswith("http://127.0.0.1:")
    url = server.register("run/a#0/1", first)
    server.register("run/b#0/1", second)
    try:
        async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            listed = await session.list_tools()
            booked = await session.call_tool(
                "book_appointment", {"patient_id": "P001", "service": "GP", "urgency": "routine"}
            )
            refused = await session.call_tool("book_appointment", {"patient_id": "nobody"})
        async with httpx.AsyncClient() as client:
            missing = await client.post(f"{opened[0]}/c99", json={})
    finally:
        await server.aclose()
    tools = {t.name: t for t in listed.tools}
    assert "book_appointment" in tools and tools["book_appointment"].input_schema["required"] == [
        "patient_id",
        "service",
        "urgency",
    ]
    assert not booked.is_error and booked.structured_content["patient_id"] == "P001"
    assert refused.is_error and "is a required property" in refused.content[0].text
    assert [c.name for c in first.calls] == ["book_appointment", "book_appointment"]
    assert first.calls[1].error is not None and first.final_state()["appointments"][0]["urgency"] == "routine"
    assert second.calls == [] and second.final_state()["appointments"] == []
    assert missing.status_code == 404


async def test_a_pydantic_ai_agent_behind_openai_endpoint_acts_on_the_world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent served as an OpenAI-compatible model with the caller's tools as external tools: the engine's
    `openai_endpoint` adapter runs the calls the agent returns against the world and resumes it."""
    from simulator.config.factors import suite_scenarios
    from simulator.engine.runner import RunOptions, run_suite
    from simulator.record.folder import RunFolder

    monkeypatch.chdir(ROOT)
    text = (ROOT / "examples" / "clinic_env" / "suite.yaml").read_text(encoding="utf-8")
    head, rest = text.split("bot:\n", 1)
    head = head.replace('paths: ["scenarios"]', f'paths: ["{SCENARIO}"]')
    path = tmp_path / "suite.yaml"
    async with (
        FakeLLMServer(responder=agent_model) as fake,
        serve(AgentEndpoint(fake.openai_base_url, "careful")) as base_url,
    ):
        bot = f"bot:\n  type: openai_endpoint\n  base_url: {base_url}\n  model: clinic-agent\n"
        path.write_text(head + bot + "user:\n" + rest.split("user:\n", 1)[1], encoding="utf-8")
        suite = load_suite(path)
        result = await run_suite(
            suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False)
        )
    assert result.errors == 0
    folder = RunFolder.open(tmp_path / "run")
    [record] = list(folder.conversations())
    calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart) and p.side == "bot"]
    assert [c.name for c in calls] == ["lookup_patient", "book_appointment"]
    assert calls[1].arguments == {"patient_id": "P002", "service": "GP", "urgency": "urgent"}
    assert record.environment_state["appointments"][0]["urgency"] == "urgent"
    verdicts = {v.criterion_id: v.result for v in folder.verdicts()}
    assert verdicts["environment.appointments[0].urgency"] == "pass" and verdicts["claim.booked"] == "pass"
    # The agent's own model saw the world's answers: the booking's result came back to it as a tool return.
    assert any("A001" in m.content for call in fake.calls for m in call.messages)


def test_environment_mcp_without_an_environment_is_refused_naming_the_field(tmp_path: Path) -> None:
    from simulator.errors import UserError

    path = tmp_path / "suite.yaml"
    path.write_text("name: x\nbot:\n  type: http\n  url: http://127.0.0.1:9/chat\n  environment_mcp: true\n")
    with pytest.raises(UserError) as caught:
        load_suite(path)
    rendered = str(caught.value) + " ".join(str(p) for p in getattr(caught.value, "problems", []))
    assert "bot.environment_mcp" in rendered and "add an `environment:`" in rendered
    assert ":5" in rendered  # the line of the field
