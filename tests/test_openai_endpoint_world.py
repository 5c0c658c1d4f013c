"""The openai_endpoint adapter in a suite with an environment: the server's tool calls run against the
conversation's world (the chat adapter's tool loop), so two model servers compare on the same world and the
same final-state checks; its state tool is held to the outcome levels; an answer that is not a chat
completion is a bot error naming the rule. Through the real `openai` SDK and the project's fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from simulator.bots.base import BotError
from simulator.record.parts import ToolCallPart
from simulator.testing import FakeCall, FakeLLMServer, FakeReply
from tests.support.servers import endpoint_factory, model_server

ROOT = Path(__file__).resolve().parent.parent


def clinic_model(call: FakeCall) -> FakeReply | str:
    """Two fine-tunes on one server, told apart by model name: both look the patient up and book, but
    `hasty-ft` books a routine slot for a fever that needs an urgent one."""
    last = call.messages[-1].content
    urgency = "urgent" if call.model == "careful-ft" else "routine"
    if last.startswith("[tool_result]") and "P002" in last and "slot" not in last:
        return FakeReply(
            tool_call=("book_appointment", {"patient_id": "P002", "service": "GP", "urgency": urgency})
        )
    if last.startswith("[tool_result]") and "slot" in last:
        return FakeReply(
            text=f"I've booked you an {urgency} appointment.",
            tool_call=("record_decision", {"disposition": "urgent" if urgency == "urgent" else "gp"}),
        )
    if any(m.content.startswith("[tool_result]") for m in call.messages):
        return "You're welcome; take care."
    return FakeReply(tool_call=("lookup_patient", {"name": "Ben Okafor"}))


def _suite(tmp_path: Path, base_url: str, model: str) -> Path:
    """The shipped clinic suite with its bot replaced by a model server, on one scenario."""
    text = (ROOT / "examples" / "clinic_env" / "suite.yaml").read_text(encoding="utf-8")
    head, rest = text.split("bot:\n", 1)
    rest = rest.split("user:\n", 1)[1]
    scenario = ROOT / "examples" / "clinic_env" / "scenarios" / "registered-urgent-fever.yaml"
    head = head.replace('paths: ["scenarios"]', f'paths: ["{scenario}"]')
    bot = f"""bot:
  type: openai_endpoint
  base_url: {base_url}
  model: {model}
  system_prompt: You are the clinic's front desk.
  tools:
    - name: record_decision
      description: Record the disposition.
      parameters: {{type: object, properties: {{disposition: {{type: string}}}}}}
  state_tool: record_decision
"""
    path = tmp_path / model / "suite.yaml"
    path.parent.mkdir()
    path.write_text(head + bot + "user:\n" + rest, encoding="utf-8")
    return path


async def test_two_model_servers_compare_on_the_same_world_and_final_state_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simulator.config.factors import suite_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite
    from simulator.record.folder import RunFolder

    monkeypatch.chdir(ROOT)  # the clinic's tool functions: examples.clinic_env.tools
    verdicts: dict[str, dict[str, str]] = {}
    async with FakeLLMServer(responder=clinic_model) as fake:
        for model in ("careful-ft", "hasty-ft"):
            suite = load_suite(_suite(tmp_path, fake.openai_base_url, model))
            out = tmp_path / model / "run"
            result = await run_suite(suite, suite_scenarios(suite), RunOptions(out=out, progress=False))
            assert result.errors == 0
            folder = RunFolder.open(out)
            [record] = list(folder.conversations())
            calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart)]
            assert [c.name for c in calls if c.side == "bot"] == ["lookup_patient", "book_appointment"]
            assert calls[0].result["id"] == "P002" and calls[1].error is None
            assert record.environment_state is not None
            assert record.environment_state["appointments"][0]["patient_id"] == "P002"
            verdicts[model] = {v.criterion_id: v.result for v in folder.verdicts()}
            assert record.final_state == {"disposition": "urgent" if model == "careful-ft" else "gp"}
    # What the server was offered: the environment's tools and its own state tool, in one request.
    offered = [t["name"] for t in fake.calls[0].tools]
    assert (
        offered[:3] == ["lookup_patient", "find_service", "book_appointment"] and "record_decision" in offered
    )
    assert verdicts["careful-ft"]["environment.appointments[0].urgency"] == "pass"
    assert verdicts["hasty-ft"]["environment.appointments[0].urgency"] == "fail"
    assert verdicts["careful-ft"]["environment.appointments[0].patient_id"] == "pass"
    assert verdicts["hasty-ft"]["environment.appointments[0].patient_id"] == "pass"


@pytest.mark.parametrize("value", [["gp", "emergency"], "very urgent", 3])
async def test_a_state_tool_value_outside_the_outcome_levels_is_a_bot_error(
    tmp_path: Path, value: Any
) -> None:
    async with FakeLLMServer(
        responder=lambda call: FakeReply(
            text="Go to A&E.", tool_call=("record_decision", {"triage_level": value})
        )
    ) as fake:
        factory = endpoint_factory(fake.openai_base_url, tmp_path)
        session = await factory.open("run/x#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("chest pain", 0)
        await factory.aclose()
    assert caught.value.kind == "invalid_reply"
    message = str(caught.value)
    assert "record_decision set triage_level" in message and "outcome.levels" in message
    assert "['self_care', 'gp', 'urgent', 'emergency']" in message


async def test_a_level_inside_the_outcome_levels_sets_the_state(tmp_path: Path) -> None:
    async with FakeLLMServer(
        responder=lambda call: FakeReply(
            text="Go to A&E.", tool_call=("record_decision", {"triage_level": "emergency"})
        )
    ) as fake:
        factory = endpoint_factory(fake.openai_base_url, tmp_path)
        session = await factory.open("run/x#0/1")
        reply = await session.send("chest pain", 0)
        await factory.aclose()
    assert reply.state == {"triage_level": "emergency"} and reply.messages == ["Go to A&E."]


async def test_a_200_answer_in_html_is_a_bot_error_naming_what_was_wrong(tmp_path: Path) -> None:
    """A proxy's login page (200, text/html) where the chat API answers JSON."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>Please sign in</body></html>", content_type="text/html")

    async with model_server(page) as base_url:
        factory = endpoint_factory(base_url, tmp_path)
        session = await factory.open("run/x#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        await factory.aclose()
    assert caught.value.kind == "invalid_reply"
    message = str(caught.value)
    assert "not a chat completion" in message and "JSON object with `choices`" in message
    assert "Please sign in" in message and "AttributeError" not in message


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ({}, "`choices` must be a non-empty list"),
        ({"choices": "x"}, "`choices` must be a non-empty list"),
        ({"choices": [{}]}, "`choices[0].message` must be an object"),
        ({"choices": [{"message": {"content": 3}}]}, "`choices[0].message.content` must be a string or null"),
        ({"choices": [{"message": {"tool_calls": "x"}}]}, "`choices[0].message.tool_calls` must be a list"),
        ({"choices": [{"message": {"tool_calls": [{"id": "a"}]}}]}, "`tool_calls[0].function.name`"),
        (
            {
                "choices": [
                    {"message": {"tool_calls": [{"id": "a", "function": {"name": "t", "arguments": {}}}]}}
                ]
            },
            "`tool_calls[0].function.arguments` must be a string (JSON text)",
        ),
        ({"choices": [{"message": {"content": "hi"}}], "usage": "x"}, "`usage` must be an object"),
        (
            {
                "choices": [{"message": {"content": "hi"}}],
                "usage": {"prompt_tokens": -5, "completion_tokens": 1},
            },
            "`usage` must hold token counts: usage.prompt_tokens is -5, which is not a token count",
        ),
        (
            {
                "choices": [{"message": {"content": "hi"}}],
                "usage": {"prompt_tokens": 2, "completion_tokens": 1.5},
            },
            "usage.completion_tokens is 1.5, which is not a token count",
        ),
        (
            {"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "12"}},
            'usage.prompt_tokens is text ("12"), which is not a token count',
        ),
        (
            {"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 10**12}},
            "usage.prompt_tokens is 1000000000000, which is not a token count (a whole number from 0 to 100,000,000)",
        ),
        ([1, 2], "not a chat completion"),
    ],
)
@pytest.mark.parametrize("in_world", [False, True])
async def test_a_malformed_answer_is_a_bot_error_naming_the_rule(
    tmp_path: Path, body: Any, rule: str, in_world: bool
) -> None:
    """Every shape the adapter reads is checked before it is read (the SDK builds objects from any JSON),
    with and without an environment; no AttributeError reaches the engine."""
    from simulator.bots.environment import make_environment
    from simulator.config.environment import EnvironmentSpec

    async def answer(request: web.Request) -> web.Response:
        return web.json_response(body)

    spec = EnvironmentSpec.model_validate({"tools": {"t": {"responses": [{"when": {}, "result": 1}]}}})
    async with model_server(answer) as base_url:
        factory = endpoint_factory(base_url, tmp_path)
        session = await factory.open("c", make_environment(spec, {}, "c") if in_world else None)
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        await factory.aclose()
    assert caught.value.kind == "invalid_reply" and rule in str(caught.value)
