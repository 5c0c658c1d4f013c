"""A malformed decision is the bot's `invalid_reply`, never judged (docs/outcome-sources.md, docs/bots.md):
an openai_endpoint server's tool call whose `arguments` are not JSON text of an object (to the state tool, to
a tool the engine answers itself, to an environment tool), and an outcome value that is not text (a list, a
number, an object, a boolean) in a bot's state or in the outcome tool's argument. The same conversation gets
the same label in the summary, the confusion matrix and the JSON report."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from simulator.analysis.outcome import actual_outcome, outcome_metrics
from simulator.analysis.rundata import load_run
from simulator.bots.base import BotError
from simulator.bots.openai_endpoint import OpenAIEndpointFactory
from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig
from simulator.config.suite import OutcomeConfig
from simulator.record.folder import RunFolder
from simulator.record.parts import ToolCallPart

LEVELS = ["self_care", "gp", "urgent", "emergency"]
NOT_AN_OBJECT = ["{not json", "[1, 2]", "5", '"emergency"', "null", "true"]


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "team-ft",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", **message}}],
    }


def _calling(name: str, arguments: str) -> Any:
    """A server that answers the first request with one call to `name` with these raw `arguments`, and
    every later one (the call answered) with text."""

    async def answer(request: web.Request) -> web.Response:
        body = await request.json()
        if any(m["role"] == "tool" for m in body["messages"]):
            return web.json_response(_completion({"content": "Go to A&E now."}))
        call = {"id": "t1", "type": "function", "function": {"name": name, "arguments": arguments}}
        return web.json_response(_completion({"content": None, "tool_calls": [call]}))

    return answer


@asynccontextmanager
async def _serving(handler: Any) -> AsyncIterator[str]:
    """A model server on 127.0.0.1 answering every chat request with `handler`; yields its /v1 base URL."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def _endpoint(base_url: str, tmp_path: Path) -> OpenAIEndpointFactory:
    return OpenAIEndpointFactory(
        OpenAIEndpointBotConfig(
            base_url=base_url,
            model="team-ft",
            tools=[
                {"name": "record_decision", "parameters": {"type": "object"}},
                {"name": "lookup_service", "parameters": {"type": "object"}},
            ],
            tool_results={"lookup_service": {"service": "A&E"}},
            state_tool="record_decision",
        ),
        tmp_path,
        OutcomeConfig(key="triage_level", levels=LEVELS),
    )


# The state tool, a tool with a canned result, a tool with none (all three answered by the engine itself),
# and, in a suite with an environment, an environment tool and the state tool.
TARGETS = [
    ("record_decision", False),
    ("lookup_service", False),
    ("unknown_tool", False),
    ("t", True),
    ("record_decision", True),
]


@pytest.mark.parametrize("arguments", NOT_AN_OBJECT)
@pytest.mark.parametrize(("tool", "in_world"), TARGETS)
async def test_a_tool_call_whose_arguments_are_not_a_json_object_is_a_bot_error(
    tmp_path: Path, tool: str, in_world: bool, arguments: str
) -> None:
    from simulator.bots.environment import make_environment
    from simulator.config.environment import EnvironmentSpec

    spec = EnvironmentSpec.model_validate({"tools": {"t": {"responses": [{"when": {}, "result": 1}]}}})
    async with _serving(_calling(tool, arguments)) as base_url:
        factory = _endpoint(base_url, tmp_path)
        session = await factory.open("c", make_environment(spec, {}, "c") if in_world else None)
        with pytest.raises(BotError) as caught:
            await session.send("chest pain", 0)
        state = await session.final_state()
        await factory.aclose()
    message = str(caught.value)
    assert caught.value.kind == "invalid_reply", message
    assert f"`tool_calls[0].function.arguments` of {tool} must be JSON text of an object" in message
    assert repr(arguments)[:40] in message and state is None


@pytest.mark.parametrize("arguments", ["", "{}", '{"triage_level": "emergency"}'])
async def test_arguments_that_are_a_json_object_or_empty_are_taken(tmp_path: Path, arguments: str) -> None:
    async with _serving(_calling("record_decision", arguments)) as base_url:
        factory = _endpoint(base_url, tmp_path)
        session = await factory.open("c")
        reply = await session.send("chest pain", 0)
        await factory.aclose()
    call = reply.parts[0]
    assert isinstance(call, ToolCallPart) and call.arguments == json.loads(arguments or "{}")
    assert call.result == {"recorded": True} and reply.messages == ["Go to A&E now."]


def _scenario(folder: Path, expected: str = "emergency") -> None:
    (folder / "scenarios").mkdir(parents=True, exist_ok=True)
    (folder / "scenarios" / "chest.yaml").write_text(
        json.dumps(
            {
                "id": "chest",
                "persona": "an adult with chest pain",
                "goal": "Ask what to do about chest pain.",
                "facts": ["I am 40 years old."],
                "expected": {"triage_level": expected},
                "max_turns": 2,
            }
        ),
        encoding="utf-8",
    )


def _suite(folder: Path, bot: dict[str, Any], outcome: dict[str, Any] | None = None) -> Path:
    _scenario(folder)
    suite = folder / "suite.yaml"
    suite.write_text(
        json.dumps(
            {
                "name": "malformed-outcome",
                "scenarios": {"paths": ["scenarios"]},
                "bot": bot,
                "user": {"model": "offline"},
                "judges": {"paths": []},
                "runs": 1,
                "outcome": {"key": "triage_level", "levels": LEVELS, **(outcome or {})},
            }
        ),
        encoding="utf-8",
    )
    return suite


def _errored_everywhere(out: Path, *named: str) -> None:
    """The one conversation is a bot `invalid_reply` naming `named`, and every reader says `error`: the
    matrix's error column, no rate counts it (no under-triage, no 'not escalated', no 'no decision')."""
    [record] = list(RunFolder.open(out).conversations())
    assert record.stop_reason == "error" and record.error is not None, record.final_state
    assert (record.error.source, record.error.kind) == ("bot", "invalid_reply"), record.error
    for words in named:
        assert words in record.error.message, record.error.message
    run = load_run(out)
    metrics = outcome_metrics(run)
    assert metrics is not None and actual_outcome(run, record) == "error"
    assert metrics.errored == 1 and metrics.matrix[-1].counts[metrics.columns.index("error")] == 1
    assert (metrics.under_triage.n, metrics.critical_sensitivity.n, metrics.no_decision.n) == (0, 0, 0)
    assert [c.kind for c in metrics.cases] == ["error"]


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"emergency"'])
async def test_a_run_records_a_state_tool_call_with_broken_arguments_as_an_error_never_under_triage(
    tmp_path: Path, arguments: str
) -> None:
    """The tester's run: `record_decision` called with `{not json` was recorded as the final state
    `{"_unparsed": "{not json"}`, and the report said 1 of 1 emergency conversations were not escalated."""
    from simulator.config.factors import suite_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite

    async with _serving(_calling("record_decision", arguments)) as base_url:
        bot = {
            "type": "openai_endpoint",
            "base_url": base_url,
            "model": "team-ft",
            "tools": [{"name": "record_decision", "parameters": {"type": "object"}}],
            "state_tool": "record_decision",
        }
        suite = load_suite(_suite(tmp_path, bot))
        await run_suite(suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False))
    _errored_everywhere(tmp_path / "run", "function.arguments", "record_decision")
