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
from simulator.config.suite import OutcomeConfig
from simulator.record.folder import RunFolder
from simulator.record.parts import ToolCallPart
from tests.support.servers import LEVELS, endpoint_factory, model_server, serving

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


def _endpoint(base_url: str, tmp_path: Path) -> OpenAIEndpointFactory:
    return endpoint_factory(
        base_url,
        tmp_path,
        tools=[
            {"name": "record_decision", "parameters": {"type": "object"}},
            {"name": "lookup_service", "parameters": {"type": "object"}},
        ],
        tool_results={"lookup_service": {"service": "A&E"}},
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
    async with model_server(_calling(tool, arguments)) as base_url:
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
    async with model_server(_calling("record_decision", arguments)) as base_url:
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

    async with model_server(_calling("record_decision", arguments)) as base_url:
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


# --- An outcome value that is not text, from any bot and any source ---------------------------------------

NOT_TEXT: list[Any] = [["emergency"], 3, 2.5, {"level": "emergency"}, True]


async def _run(folder: Path, bot: dict[str, Any], outcome: dict[str, Any] | None = None) -> Path:
    from simulator.config.factors import suite_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite

    suite = load_suite(_suite(folder, bot, outcome))
    await run_suite(suite, suite_scenarios(suite), RunOptions(out=folder / "run", progress=False))
    return folder / "run"


@asynccontextmanager
async def _http_bot(state: dict[str, Any] | None) -> AsyncIterator[str]:
    """An http bot answering every turn with one advice message, closing, with this `state`."""

    async def chat(request: web.Request) -> web.Response:
        body: dict[str, Any] = {"messages": ["Call 999 now."], "closed": True}
        if state is not None:
            body["state"] = state
        return web.json_response(body)

    async with serving("/chat", chat) as url:
        yield url


@pytest.mark.parametrize("value", NOT_TEXT)
async def test_an_http_bot_s_outcome_value_that_is_not_text_is_its_invalid_reply(
    tmp_path: Path, value: Any
) -> None:
    """The tester's run: `{"triage_level": ["emergency"]}` was `no decision` in the summary (under-triage
    incl. 1 with no decision) and `other` in the confusion matrix; now an error, the same everywhere."""
    async with _http_bot({"triage_level": value}) as url:
        out = await _run(tmp_path, {"type": "http", "url": url})
    _errored_everywhere(out, "state.triage_level", json.dumps(value), "not text")


@pytest.mark.parametrize(("value", "column"), [(None, "no decision"), ("very urgent", "other"), ("gp", "gp")])
async def test_text_or_null_under_the_outcome_key_is_still_read(
    tmp_path: Path, value: Any, column: str
) -> None:
    async with _http_bot({"triage_level": value}) as url:
        out = await _run(tmp_path, {"type": "http", "url": url})
    run = load_run(out)
    [record] = run.conversations
    assert record.stop_reason != "error" and actual_outcome(run, record) == column


class _Decides:
    """A python bot: one advice turn, closing; its `Reply` state, its outcome tool call and its
    `final_state()` set from the class attributes (a test's subclass plants one bad value)."""

    state: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    final: dict[str, Any] | None = None

    def send(self, text: str) -> Any:
        from simulator.bots.base import Reply

        parts: list[dict[str, Any]] = [{"type": "text", "text": "Call 999 now."}]
        if self.tool is not None:
            parts.insert(0, {"type": "tool_call", "name": "record_disposition", "arguments": self.tool})
        return Reply(parts=parts, state=self.state, closed=True)

    def final_state(self) -> dict[str, Any] | None:
        return self.final


PLANTED: dict[str, dict[str, Any]] = {
    "final_list": {"final": {"triage_level": ["emergency"]}},
    "final_number": {"state": {"triage_level": "emergency"}, "final": {"triage_level": 3}},
    "tool_number": {"tool": {"level": 3}},
    "tool_list": {"tool": {"level": ["emergency"]}},
    "tool_object": {"tool": {"level": {"code": "emergency"}}},
}


def planted_bot(name: str) -> Any:
    return type(name, (_Decides,), PLANTED[name])()


def final_list() -> Any:
    return planted_bot("final_list")


def final_number() -> Any:
    return planted_bot("final_number")


def tool_number() -> Any:
    return planted_bot("tool_number")


def tool_list() -> Any:
    return planted_bot("tool_list")


def tool_object() -> Any:
    return planted_bot("tool_object")


@pytest.mark.parametrize("factory", ["final_list", "final_number"])
async def test_a_python_bot_s_final_state_value_that_is_not_text_is_its_invalid_reply(
    tmp_path: Path, factory: str
) -> None:
    out = await _run(tmp_path, {"type": "python", "factory": f"tests.test_outcome_values:{factory}"})
    _errored_everywhere(out, "state.triage_level", "not text")


TOOL_SOURCE = {"source": "tool", "tool": {"call": "record_disposition.level"}}


@pytest.mark.parametrize("factory", ["tool_number", "tool_list", "tool_object"])
async def test_an_outcome_tool_argument_that_is_not_text_is_the_bot_s_invalid_reply(
    tmp_path: Path, factory: str
) -> None:
    bot = {"type": "python", "factory": f"tests.test_outcome_values:{factory}"}
    out = await _run(tmp_path, bot, TOOL_SOURCE)
    _errored_everywhere(out, "record_disposition call's level", "not text")


def _stored(final_state: dict[str, Any] | None, tool: dict[str, Any] | None = None) -> Any:
    """A stored conversation (imported, or run before this rule) with this state and outcome tool call."""
    from simulator.record.models import ConversationRecord

    now = "2026-01-01T00:00:00Z"
    parts: list[dict[str, Any]] = [{"type": "text", "text": "Call 999 now."}]
    if tool is not None:
        parts.insert(0, {"type": "tool_call", "name": "record_disposition", "arguments": tool})
    turn = {"index": 1, "role": "bot", "started_at": now, "parts": parts}
    return ConversationRecord.model_validate(
        {"id": "x#0", "scenario_id": "x", "repeat": 0, "stop_reason": "bot_closed", "started_at": now,
         "ended_at": now, "turns": [turn], "final_state": final_state}
    )  # fmt: skip


@pytest.mark.parametrize("value", NOT_TEXT)
def test_a_stored_conversation_s_value_that_is_not_text_reads_as_an_error_from_state_and_tool(
    value: Any,
) -> None:
    """Where the engine did not see it (imported, run before the rule, re-judged with another source)."""
    from simulator.eventloop import run_async
    from simulator.judging.outcome_reader import make_outcome_reader

    for outcome, record in (
        ({"source": "state"}, _stored({"triage_level": value})),
        (TOOL_SOURCE, _stored(None, {"level": value})),
    ):
        config = OutcomeConfig.model_validate({"key": "triage_level", "levels": LEVELS, **outcome})
        decided = run_async(make_outcome_reader(config).decide(record))
        reading = decided.readings[config.sources[0]]
        assert (decided.value, reading.value, reading.raw) == ("error", "error", value)
        assert reading.note is not None and "not text" in reading.note
    # Another source that decides still decides; the state's malformed value stays recorded as an error.
    config = OutcomeConfig.model_validate(
        {"key": "triage_level", "levels": LEVELS, "source": ["messages", "state"],
         "messages": {"phrases": {"emergency": [r"\bcall 999\b"]}}}
    )  # fmt: skip
    decided = run_async(make_outcome_reader(config).decide(_stored({"triage_level": value})))
    assert (decided.value, decided.readings["state"].value) == ("emergency", "error")


def odd_judge(call: Any) -> Any:
    """An outcome judge that quotes the bot exactly but names a level the suite does not have."""
    from simulator.testing import FakeReply

    answer = {"reasoning": "Scripted.", "quote": "Call 999 now.", "level": "critical"}
    return FakeReply(text=json.dumps(answer))


async def test_an_outcome_judge_naming_no_level_is_an_error_never_other(tmp_path: Path) -> None:
    """It was `other`: the judge's own malformed answer counted as the bot's under-triage."""
    folder = tmp_path / "j"
    out = await _run(
        folder,
        {"type": "python", "factory": "tests.test_outcome_values:tool_number"},
        {"source": "judge", "judge": {"model": "test:tests.test_outcome_values:odd_judge"}},
    )
    run = load_run(out)
    [record] = run.conversations
    assert record.stop_reason != "error" and actual_outcome(run, record) == "error"
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.errored == 1 and metrics.under_triage.n == 0


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ({"triage_level": "very urgent"}, "1 with a value that is not a level (other)"),
        (None, "1 with no decision"),
    ],
)
async def test_the_summary_names_an_undecided_conversation_as_the_matrix_does(
    tmp_path: Path, state: dict[str, Any] | None, words: str
) -> None:
    """A word that is not a level is `other` in the matrix; the summary said "incl. 1 with no decision"."""
    from simulator.report.model import _outcome_findings

    async with _http_bot(state) as url:
        out = await _run(tmp_path, {"type": "http", "url": url})
    metrics = outcome_metrics(load_run(out))
    assert metrics is not None
    column = "other" if state else "no decision"
    assert metrics.matrix[-1].counts[metrics.columns.index(column)] == 1
    [under] = [f for f in _outcome_findings(metrics) if f.title.startswith("under-triage")]
    assert under.detail == f"incl. {words} on a case that needed one"


def test_a_chat_bot_s_decision_with_arguments_that_are_not_json_is_an_error_never_an_under_triage(
    tmp_path: Path,
) -> None:
    """A chat bot (our model-driven bot, through the real OpenAI SDK against the fake server) whose model
    called its decision tool with broken arguments was read as no decision: every emergency counted as
    under-triaged. Five kinds of broken arguments, one per scenario: each conversation is the bot's
    invalid_reply, in no rate."""
    from simulator.cli import main
    from tests._outcome_bots import BROKEN_DECISIONS

    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for number in range(len(BROKEN_DECISIONS)):
        (scenarios / f"c{number}.yaml").write_text(
            json.dumps(
                {
                    "id": f"c{number}",
                    "persona": "an adult",
                    "goal": f"Ask about case {number}.",
                    "facts": ["I have chest pain."],
                    "expected": {"triage_level": "emergency"},
                    "max_turns": 2,
                }
            )
        )
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        json.dumps(
            {
                "scenarios": {"paths": ["scenarios"]},
                "bot": {
                    "type": "chat",
                    "model": "test:tests._outcome_bots:broken_decision",
                    "system_prompt": "Triage.",
                    "decision_tool": {
                        "name": "record_triage",
                        "field": "triage_level",
                        "values": ["self_care", "gp", "urgent", "emergency"],
                    },
                },
                "user": {"model": "offline"},
                "outcome": {
                    "key": "triage_level",
                    "levels": ["self_care", "gp", "urgent", "emergency"],
                    "critical": "emergency",
                },
            }
        )
    )
    out = tmp_path / "run"
    assert main(["run", str(suite), "--out", str(out), "--no-progress"]) == 3
    run = load_run(out)
    assert len(run.conversations) == len(BROKEN_DECISIONS)
    for record in run.conversations:
        assert record.error is not None and record.error.kind == "invalid_reply", record.error
        assert (
            "record_triage" in record.error.message and "not JSON text of an object" in record.error.message
        )
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.under_triage.n == 0 and metrics.errored == len(BROKEN_DECISIONS)
