"""Providers through the real anthropic and openai SDKs, pointed at the project's fake server."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.suite import ProviderSettings
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError, ToolSpec
from simulator.providers.hub import ModelClient
from simulator.providers.openai import OpenAIProvider
from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply, FaultConfig
from tests.conftest import close_after_test

SCHEMA = {
    "type": "object",
    "properties": {"result": {"type": "string", "enum": ["pass", "fail"]}, "reasoning": {"type": "string"}},
    "required": ["result", "reasoning"],
}
TOOL = ToolSpec(
    name="record_decision",
    description="Record the decision.",
    parameters={
        "type": "object",
        "properties": {"triage_level": {"type": "string"}},
        "required": ["triage_level"],
    },
)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    OpenAIProvider.schema_modes.clear()


def request(**kw: object) -> ModelRequest:
    base: dict[str, object] = {
        "model": "m",
        "system": "be brief",
        "messages": [ChatMessage(role="user", content="hello there")],
    }
    return ModelRequest(**{**base, **kw})  # type: ignore[arg-type]


def anthropic(server: FakeLLMServer, **kw: object) -> AnthropicProvider:
    return close_after_test(AnthropicProvider(ProviderSettings(base_url=server.base_url, **kw)))  # type: ignore[arg-type]


def openai(server: FakeLLMServer, **kw: object) -> OpenAIProvider:
    return close_after_test(OpenAIProvider(ProviderSettings(base_url=server.base_url + "/v1", **kw)))  # type: ignore[arg-type]


async def test_anthropic_text_usage_temperature_and_raw() -> None:
    async with FakeLLMServer(lambda call: "hi from the fake") as server:
        response = await anthropic(server).generate(request(temperature=0.3, max_tokens=50))
    assert response.text == "hi from the fake"
    assert response.usage.output_tokens == 4 and response.usage.input_tokens > 0 and response.usage.calls == 1
    call = server.calls[0]
    assert call.api == "anthropic" and call.system == "be brief" and call.temperature == 0.3
    assert response.raw["request"]["model"] == "m" and "test-anthropic-key" not in json.dumps(response.raw)


async def test_anthropic_marks_the_shared_prefix_cacheable() -> None:
    async with FakeLLMServer(lambda call: "ok") as server:
        provider = anthropic(server)
        messages = [ChatMessage(role="user", content="a long shared transcript " * 20)]
        first = await provider.generate(request(messages=messages, cacheable_prefix_messages=1))
        second = await provider.generate(request(messages=messages, cacheable_prefix_messages=1))
    assert first.usage.cached_input_tokens == 0
    assert second.usage.cached_input_tokens > 0
    assert second.usage.input_tokens >= second.usage.cached_input_tokens


@pytest.mark.parametrize("make", [anthropic, openai])
async def test_tool_calls_and_structured_output(make: object) -> None:
    def responder(call: FakeCall) -> FakeReply | str:
        if call.tools:
            return FakeReply(tool_call=("record_decision", {"triage_level": "urgent"}))
        return json.dumps({"result": "fail", "reasoning": "no question about the arm"})

    async with FakeLLMServer(responder) as server:
        provider = make(server)  # type: ignore[operator]
        tool = await provider.generate(request(tools=[TOOL]))
        structured = await provider.generate(request(output_schema=SCHEMA))
    assert [(c.name, c.arguments) for c in tool.tool_calls] == [
        ("record_decision", {"triage_level": "urgent"})
    ]
    assert structured.parsed == {"result": "fail", "reasoning": "no question about the arm"}
    assert server.calls[1].schema is not None


async def test_openai_degrades_structured_output_and_remembers_per_server() -> None:
    answer = json.dumps({"result": "pass", "reasoning": "asked"})
    async with FakeLLMServer(lambda call: answer, refuse_json_schema=True) as server:
        provider = openai(server)
        first = await provider.generate(request(output_schema=SCHEMA))
        second = await provider.generate(request(output_schema=SCHEMA))
    formats = [call.body.get("response_format", {}).get("type") for call in server.calls]
    # json_schema refused once (not retried), then json_object; the second request goes straight there.
    assert formats == ["json_schema", "json_object", "json_object"]
    assert first.parsed == second.parsed == {"result": "pass", "reasoning": "asked"}
    assert first.raw["schema_mode"] == "json_object"


@pytest.mark.parametrize("make", [anthropic, openai])
@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (FakeReply(status=429, retry_after=2.5), "rate_limit"),
        (FakeReply(status=500), "transient"),
        (FakeReply(status=401, error_type="authentication_error"), "permanent"),
        (FakeReply(status=400, error_type="invalid_request_error"), "permanent"),
        (FakeReply(malformed=True), "transient"),
    ],
)
async def test_errors_are_classified(make: object, reply: FakeReply, kind: str) -> None:
    async with FakeLLMServer(lambda call: reply) as server:
        with pytest.raises(ProviderError) as caught:
            await make(server).generate(request())  # type: ignore[operator]
    assert caught.value.kind == kind
    if kind == "rate_limit":
        assert caught.value.retry_after == 2.5
    if reply.status == 401:
        assert "API key" in str(caught.value)


async def test_client_retries_transient_errors_but_not_permanent_ones() -> None:
    faults = FaultConfig(fail_first_n=2, fail_first_kind="error_429", retry_after_s=0.01)
    async with FakeLLMServer(lambda call: "finally", faults=faults) as server:
        client = ModelClient(anthropic(server), ProviderSettings(max_attempts=4))
        response = await client.generate(request())
    assert response.text == "finally" and len(server.calls) == 3 and client.retries == 2

    async with FakeLLMServer(lambda call: FakeReply(status=401, error_type="authentication_error")) as server:
        client = ModelClient(openai(server), ProviderSettings(max_attempts=4))
        with pytest.raises(ProviderError):
            await client.generate(request())
    assert len(server.calls) == 1


async def test_retries_are_bounded() -> None:
    async with FakeLLMServer(lambda call: FakeReply(status=500)) as server:
        client = ModelClient(openai(server), ProviderSettings(max_attempts=3))
        with pytest.raises(ProviderError) as caught:
            await client.generate(request())
    assert caught.value.kind == "transient" and len(server.calls) == 3


def _llm_user_and_chat_bot(call: FakeCall) -> FakeReply | str:
    """Plays both sides: the simulated user (system prompt of a role-play) and a chat triage bot."""
    if call.system and "role-playing a person" in call.system:
        said = [m.content for m in call.messages if m.role == "assistant"]
        if not said:
            return "hi my chest feels tight"
        last_bot = call.messages[-1].content.lower()
        if "arm" in last_bot:
            return "yes it goes to my left arm"
        return "[END]"
    if len(call.messages) == 1:
        return "Does the pain spread to your arm or jaw?"
    if call.tools:
        return FakeReply(tool_call=("record_decision", {"triage_level": "emergency"}))
    return "Call 999 now."


def test_suite_runs_through_the_real_sdks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "chest.yaml").write_text(
        "id: chest-1\npersona: a man\ngoal: know what to do about chest pain\nfacts: [The pain goes to the left arm.]\n"
        "expected: {triage_level: emergency}\n"
    )
    (tmp_path / "prompt.md").write_text("You are a triage bot.")
    with FakeLLMServer(_llm_user_and_chat_bot) as server:
        (tmp_path / "suite.yaml").write_text(
            textwrap.dedent(f"""
            name: sdk
            bot:
              type: chat
              model: openai:gpt-fake
              system_prompt_file: prompt.md
              decision_tool: {{field: triage_level, values: [self_care, gp, urgent, emergency]}}
            user: {{model: "anthropic:claude-fake", temperature: 0.7}}
            runs: 2
            providers:
              anthropic: {{base_url: "{server.base_url}"}}
              openai: {{base_url: "{server.base_url}/v1"}}
            """)
        )
        assert (
            main(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
        )
    folder = RunFolder.open(tmp_path / "run")
    records = list(folder.conversations())
    assert len(records) == 2
    for record in records:
        assert record.final_state == {"triage_level": "emergency"}
        assert record.turns[0].messages == ["hi my chest feels tight"]
        assert record.turns[0].model and record.turns[1].usage is not None
        assert record.usage_by_role["user"].calls >= 2 and record.usage_by_role["bot"].calls >= 2
    assert {c.api for c in server.calls} == {"anthropic", "openai"}
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert "anthropic:claude-fake" in manifest and "test-anthropic-key" not in manifest
    verdicts = [v for v in folder.verdicts() if v.criterion_id == "outcome.triage_level"]
    assert {v.result for v in verdicts} == {"pass"}


@pytest.mark.parametrize("make", [anthropic, openai])
async def test_streaming_joins_text_and_tools_and_records_time_to_first_token(make: object) -> None:
    def responder(call: FakeCall) -> FakeReply | str:
        if call.tools:
            return FakeReply(tool_call=("record_decision", {"triage_level": "gp"}))
        return "please book a GP appointment this week if it does not settle"

    # 20 words/second: the last words arrive well after the first.
    async with FakeLLMServer(responder, tokens_per_second=20) as server:
        provider = make(server)  # type: ignore[operator]
        text = await provider.generate(request(stream=True))
        tool = await provider.generate(request(stream=True, tools=[TOOL]))
    assert text.text == "please book a GP appointment this week if it does not settle"
    assert text.usage.output_tokens == 12 and text.usage.input_tokens > 0
    assert text.time_to_first_token_s is not None and text.time_to_first_token_s < text.latency_s
    assert [(c.name, c.arguments) for c in tool.tool_calls] == [("record_decision", {"triage_level": "gp"})]
    assert all(call.stream for call in server.calls)


def test_a_streaming_chat_bot_records_time_to_first_token_per_turn(tmp_path: Path) -> None:
    (tmp_path / "chest.yaml").write_text(
        "id: chest-1\npersona: a man\ngoal: know what to do about chest pain\nfacts: [The pain goes to the left arm.]\n"
        "expected: {triage_level: emergency}\n"
    )
    with FakeLLMServer(_llm_user_and_chat_bot, tokens_per_second=50) as server:
        (tmp_path / "suite.yaml").write_text(
            textwrap.dedent(f"""
            bot: {{type: chat, model: openai:gpt-fake, system_prompt: triage, stream: true,
                   decision_tool: {{field: triage_level}}}}
            user: {{model: "anthropic:claude-fake"}}
            providers:
              anthropic: {{base_url: "{server.base_url}"}}
              openai: {{base_url: "{server.base_url}/v1"}}
            """)
        )
        assert (
            main(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
        )
    [record] = RunFolder.open(tmp_path / "run").conversations()
    bot_turns = [t for t in record.turns if t.role == "bot"]
    assert bot_turns and all(t.time_to_first_token_s is not None for t in bot_turns)
    assert all(t.time_to_first_token_s <= t.latency_s for t in bot_turns)  # type: ignore[operator]
    assert record.final_state == {"triage_level": "emergency"}
    assert main(["report", str(tmp_path / "run"), "--json", str(tmp_path / "summary.json"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    [ttft] = [row for row in summary["cost"]["latency"] if row["name"] == "bot time to first token"]
    assert ttft["n"] == len(bot_turns) and ttft["median_s"] > 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"result": "pass"}', {"result": "pass"}),
        (
            'Sure! ```json\n{"result": "fail", "evidence": ["a {b}"]}\n``` hope that helps',
            {"result": "fail", "evidence": ["a {b}"]},
        ),
        ('[1, 2] then {"a": 1} and {"b": 2}', {"a": 1}),
        ('{not json} but later {"ok": true}', {"ok": True}),
        ('{"cut off by max_tokens": "the answ', None),
        ("no json here", None),
        ("[1, 2, 3]", None),
        ("", None),
    ],
)
def test_one_reader_finds_the_json_object_in_any_reply(text: str, expected: object) -> None:
    from simulator.providers.base import json_object_in

    assert json_object_in(text) == expected
