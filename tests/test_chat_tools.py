"""The chat adapter's tool loop through the real anthropic and openai SDKs against the fake server: tools
offered, calls run on the environment, results sent back in each API's wire format (ids matched, errors
flagged), the round limit recorded as an error part, the LLM user's own tools, and the `test:tools` suite."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.config.suite import ProviderSettings
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError, ToolCall
from simulator.providers.openai import OpenAIProvider
from simulator.record.folder import RunFolder
from simulator.record.parts import TextPart, ToolCallPart
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests.conftest import close_after_test

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    OpenAIProvider.schema_modes.clear()


BOT_SYSTEM = "You are the clinic bot."


def clinic_model(call: FakeCall) -> FakeReply | str:
    """The bot: looks up and books (one bad call among them), then says what the results were. The user:
    reads the thermometer when it has the tool and is asked, else states its problem, then ends."""
    if call.system == BOT_SYSTEM:
        if not call.tool_results:
            return FakeReply(
                text="Let me check.",
                tool_calls=(("lookup", {"name": "Ana"}), ("book", {"urgency": "whenever"})),
            )
        seen = " | ".join(r["content"] for r in call.tool_results)
        flags = "".join("E" if r["is_error"] else "." for r in call.tool_results)
        return f"I recommend rest. Tools said: {seen} [{flags}]"
    if call.tools and not call.tool_results:
        return FakeReply(tool_call=("read_thermometer", {}))
    if call.tool_results:
        return f"my thermometer says {call.tool_results[0]['content']}"
    return "[END]" if len(call.messages) > 2 else "I have a fever"


ENV = """
environment:
  max_tool_rounds: {rounds}
  state: {{patients: [Ana]}}
  tools:
    lookup:
      parameters: {{type: object, properties: {{name: {{type: string}}}}, required: [name]}}
      responses:
        - when: {{name: Ana}}
          result: {{id: P1}}
    book:
      parameters: {{type: object, properties: {{urgency: {{type: string, enum: [urgent, routine]}}}}}}
      responses: [{{result: booked}}]
  user_tools:
    read_thermometer:
      description: read the thermometer
      reads: readings.temperature
"""


def write_suite(
    tmp_path: Path,
    server: FakeLLMServer,
    bot_api: str,
    user: str = "offline",
    rounds: int = 3,
    stream: bool = False,
) -> Path:
    (tmp_path / "s.yaml").write_text(
        "id: s\npersona: an adult with a fever\ngoal: know what to do\nfacts: [I have a fever.]\n"
        "environment: {readings: {temperature: 39.1}}\nmax_turns: 3\n"
    )
    model = "anthropic:claude-fake" if bot_api == "anthropic" else "openai:gpt-fake"
    (tmp_path / "suite.yaml").write_text(
        textwrap.dedent(f"""
        name: chat-tools
        bot:
          type: chat
          model: {model}
          system_prompt: {BOT_SYSTEM}
          stream: {str(stream).lower()}
        user: {{model: "{user}"}}
        providers:
          anthropic: {{base_url: "{server.base_url}"}}
          openai: {{base_url: "{server.base_url}/v1"}}
        """)
        + textwrap.dedent(ENV.format(rounds=rounds))
    )
    return tmp_path / "suite.yaml"


def run(tmp_path: Path, suite: Path) -> RunFolder:
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) in (0, 1)
    return RunFolder.open(tmp_path / "run")


@pytest.mark.parametrize("api", ["anthropic", "openai"])
@pytest.mark.parametrize("stream", [False, True])
def test_the_chat_bot_runs_its_tools_and_sends_the_results_back(
    tmp_path: Path, api: str, stream: bool
) -> None:
    with FakeLLMServer(clinic_model) as server:
        folder = run(tmp_path, write_suite(tmp_path, server, api, stream=stream))
    (record,) = list(folder.conversations())
    assert record.stop_reason != "error", record.error
    bot = record.turns[1]
    kinds = [(type(p).__name__, getattr(p, "name", None)) for p in bot.parts]
    assert kinds == [
        ("TextPart", None),
        ("ToolCallPart", "lookup"),
        ("ToolCallPart", "book"),
        ("TextPart", None),
    ]
    lookup, book = bot.parts[1], bot.parts[2]
    assert isinstance(lookup, ToolCallPart) and lookup.result == {"id": "P1"}
    assert isinstance(book, ToolCallPart) and book.error is not None and "urgency" in book.error
    final = bot.parts[3]
    assert isinstance(final, TextPart) and '{"id": "P1"}' in final.text and "ERROR:" in final.text
    if api == "anthropic":
        assert final.text.endswith("[.E]")  # the failed call went back flagged is_error
    bot_calls = [c for c in server.calls if c.system == BOT_SYSTEM]
    assert bot_calls[0].tools and {t["name"] for t in bot_calls[0].tools} == {"lookup", "book"}
    second = bot_calls[1]
    assert [r["id"] for r in second.tool_results] == _tool_ids(second.body, api)
    assert bot.usage is not None and bot.usage.calls == 2
    assert record.environment_state == {"patients": ["Ana"], "readings": {"temperature": 39.1}}


def _tool_ids(body: dict[str, Any], api: str) -> list[str]:
    """The tool call ids of the assistant message in a request, as the wire carries them."""
    assistant = next(m for m in body["messages"] if m["role"] == "assistant")
    if api == "anthropic":
        return [b["id"] for b in assistant["content"] if b["type"] == "tool_use"]
    return [c["id"] for c in assistant["tool_calls"]]


def always_a_tool(call: FakeCall) -> FakeReply | str:
    if call.system == BOT_SYSTEM:
        return FakeReply(tool_call=("lookup", {"name": "Ana"}))
    return "[END]" if len(call.messages) > 2 else "hello"


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_model_that_never_stops_calling_tools_hits_the_round_limit(tmp_path: Path, api: str) -> None:
    with FakeLLMServer(always_a_tool) as server:
        folder = run(tmp_path, write_suite(tmp_path, server, api, rounds=2))
    (record,) = list(folder.conversations())
    assert record.stop_reason != "error", record.error
    bot = record.turns[1]
    calls = [p for p in bot.parts if isinstance(p, ToolCallPart)]
    assert [c.error is None for c in calls] == [True, True, False]
    assert calls[-1].error is not None and "max_tool_rounds (2)" in calls[-1].error
    assert bot.messages == ["(no reply)"] and bot.usage is not None and bot.usage.calls == 3
    # The next turn's request is still valid for the API (the refused call got a result too).
    bot_turns = [t for t in record.turns if t.role == "bot"]
    assert len(bot_turns) >= 2
    assert len([c for c in server.calls if c.system == BOT_SYSTEM]) == 3 * len(bot_turns)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_llm_user_uses_its_own_tools(tmp_path: Path, api: str) -> None:
    user = "anthropic:claude-user" if api == "anthropic" else "openai:gpt-user"
    with FakeLLMServer(clinic_model) as server:
        folder = run(tmp_path, write_suite(tmp_path, server, api, user=user))
    (record,) = list(folder.conversations())
    first = record.turns[0]
    assert isinstance(first.parts[0], ToolCallPart) and first.parts[0].side == "user"
    assert first.parts[0].name == "read_thermometer" and first.parts[0].result == 39.1
    assert first.messages == ["my thermometer says 39.1"]
    user_calls = [c for c in server.calls if c.system != BOT_SYSTEM]
    assert [t["name"] for t in user_calls[0].tools] == ["read_thermometer"]  # never the bot's tools


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_the_fake_server_refuses_a_result_for_no_call(api: str) -> None:
    async with FakeLLMServer(lambda call: "ok") as server:
        provider = close_after_test(
            AnthropicProvider(ProviderSettings(base_url=server.base_url))
            if api == "anthropic"
            else OpenAIProvider(ProviderSettings(base_url=server.base_url + "/v1"))
        )
        asked = ChatMessage(
            role="assistant", content="", tool_calls=(ToolCall(name="lookup", arguments={}, id="call_a"),)
        )
        good = [
            ChatMessage(role="user", content="hi"),
            asked,
            ChatMessage(role="tool", content="x", tool_call_id="call_a"),
        ]
        response = await provider.generate(ModelRequest(model="m", messages=good))
        assert response.text == "ok"
        assert server.calls[-1].tool_results == [{"id": "call_a", "content": "x", "is_error": False}]
        bad = [
            ChatMessage(role="user", content="hi"),
            asked,
            ChatMessage(role="tool", content="x", tool_call_id="other"),
        ]
        with pytest.raises(ProviderError) as caught:
            await provider.generate(ModelRequest(model="m", messages=bad))
        assert caught.value.kind == "permanent" and "other" in str(caught.value)


def test_text_only_chat_requests_are_unchanged_by_tool_fields() -> None:
    """A text conversation dumps as it always did: the cache keys of existing runs still hit."""
    message = ChatMessage(role="user", content="hi")
    assert message.model_dump(mode="json") == {"role": "user", "content": "hi"}
    dumped = ModelRequest(model="m", messages=[message]).model_dump(mode="json")
    assert dumped["messages"] == [{"role": "user", "content": "hi"}]


def test_the_shipped_chat_suite_runs_offline_with_tool_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    suite = ROOT / "examples" / "clinic_env" / "suite-chat.yaml"
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) in (0, 1)
    records = list(RunFolder.open(tmp_path / "run").conversations())
    assert len(records) == 6 and all(r.stop_reason != "error" for r in records)
    for record in records:
        calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart) and p.side == "bot"]
        assert {c.name for c in calls} >= {"lookup_patient", "find_service", "book_appointment"}
        assert record.environment_state is not None
    dumped = json.dumps([r.model_dump(mode="json") for r in records])
    assert '"type": "tool_call"' in dumped


@pytest.mark.parametrize("native", [True, False])
def test_the_local_provider_sends_a_tool_loop_as_its_template_reads_it(native: bool) -> None:
    from simulator.providers.local import completion_kwargs

    asked = ChatMessage(
        role="assistant",
        content="",
        tool_calls=(ToolCall(name="lookup", arguments={"name": "Ana"}, id="c1"),),
    )
    answered = ChatMessage(role="tool", content='{"id": "P1"}', tool_call_id="c1", is_error=True)
    request = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi"), asked, answered])
    messages = completion_kwargs(request, template_takes_tools=native)["messages"]
    if native:
        assert messages[1]["tool_calls"][0]["id"] == "c1" and messages[1]["content"] is None
        assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": '{"id": "P1"}'}
    else:
        assert messages[1] == {
            "role": "assistant",
            "content": '{"name": "lookup", "arguments": {"name": "Ana"}}',
        }
        assert messages[2] == {"role": "user", "content": 'Tool result (error) for c1: {"id": "P1"}'}
