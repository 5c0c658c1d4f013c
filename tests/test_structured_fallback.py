"""The openai provider's structured-output ladder on stricter servers than llama.cpp: JSON mode without the
schema key, then JSON found in plain text; remembered per base URL. Real openai SDK, the fake server."""

from __future__ import annotations

import json

import pytest

from simulator.config.suite import ProviderSettings
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.hub import ModelClient
from simulator.providers.openai import OpenAIProvider
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests.conftest import close_after_test

SCHEMA = {
    "type": "object",
    "properties": {"result": {"type": "string", "enum": ["pass", "fail"]}, "reasoning": {"type": "string"}},
    "required": ["result", "reasoning"],
}
ANSWER = {"result": "fail", "reasoning": "never asked for the order number"}


@pytest.fixture(autouse=True)
def fresh_memory() -> None:
    OpenAIProvider.schema_modes.clear()


def judged() -> ModelRequest:
    return ModelRequest(
        model="m",
        system="You judge support chats.",
        messages=[ChatMessage(role="user", content="BOT: hello")],
        output_schema=SCHEMA,
    )


def response_format(call: FakeCall) -> dict[str, object] | None:
    value = call.body.get("response_format")
    return value if isinstance(value, dict) else None


async def test_a_server_that_rejects_the_schema_key_gets_plain_json_mode() -> None:
    def strict(call: FakeCall) -> FakeReply | str:
        fmt = response_format(call)
        if fmt is not None and "schema" in fmt:
            return FakeReply(
                status=400, text="Unrecognized request argument supplied: response_format.schema"
            )
        return json.dumps(ANSWER)

    async with FakeLLMServer(strict, refuse_json_schema=True) as server:
        provider = close_after_test(OpenAIProvider(ProviderSettings(base_url=server.openai_base_url)))
        first = await provider.generate(judged())
        second = await provider.generate(judged())
    sent = [response_format(call) for call in server.calls]
    assert [f["type"] if f else None for f in sent] == [
        "json_schema",
        "json_object",
        "json_object",
        "json_object",
    ]
    assert "schema" in sent[1]  # type: ignore[operator]
    assert sent[2] == sent[3] == {"type": "json_object"}  # remembered: the second call goes straight there
    assert first.parsed == second.parsed == ANSWER
    assert first.raw["schema_mode"] == "json_object_plain"
    assert OpenAIProvider.schema_modes[server.openai_base_url] == "json_object_plain"
    # Without the schema key the model learns the fields from the system prompt, which says JSON.
    assert server.calls[2].system is not None and '"enum": ["pass", "fail"]' in server.calls[2].system
    assert server.calls[0].system == "You judge support chats."  # json_schema mode: the prompt is untouched


async def test_a_server_without_json_mode_gets_the_schema_in_the_prompt_and_json_in_text() -> None:
    def no_formats(call: FakeCall) -> FakeReply | str:
        if response_format(call) is not None:
            return FakeReply(status=422, text="response_format is not supported by this server")
        return "Sure! {this is not it}\n```json\n" + json.dumps(ANSWER) + "\n```\nHope that helps."

    async with FakeLLMServer(no_formats) as server:
        settings = ProviderSettings(base_url=server.openai_base_url + "/", max_attempts=3)
        client = ModelClient(close_after_test(OpenAIProvider(settings)), settings)
        first = await client.generate(judged())
        second = await client.generate(judged())
    assert len(server.calls) == 5  # three refusals, none retried, then text twice
    assert client.retries == 0
    assert [response_format(call) is None for call in server.calls] == [False, False, False, True, True]
    assert first.parsed == second.parsed == ANSWER
    assert second.raw["schema_mode"] == "text"
    assert OpenAIProvider.schema_modes[server.openai_base_url] == "text"  # trailing slash folded away
    assert "matching this JSON schema" in (server.calls[4].system or "")


async def test_an_ordinary_server_error_is_not_taken_for_a_refusal() -> None:
    async with FakeLLMServer(lambda call: FakeReply(status=500, text="the GPU fell over")) as server:
        provider = close_after_test(OpenAIProvider(ProviderSettings(base_url=server.openai_base_url)))
        with pytest.raises(ProviderError) as caught:
            await provider.generate(judged())
    assert caught.value.kind == "transient"  # retryable by the client, and no mode was given up
    assert len(server.calls) == 1
    assert server.openai_base_url not in OpenAIProvider.schema_modes


async def test_a_cut_off_reply_has_no_parsed_object_and_modes_are_per_server() -> None:
    OpenAIProvider.schema_modes["http://unused"] = "text"  # per URL: does not leak to another server
    async with FakeLLMServer(lambda call: '{"result": "pass", "reasoning": "cut off by max_tok') as server:
        provider = close_after_test(OpenAIProvider(ProviderSettings(base_url=server.openai_base_url)))
        response = await provider.generate(judged())
    assert response.raw["schema_mode"] == "json_schema"
    assert response.parsed is None
    assert response.text.startswith('{"result": "pass"')


def test_grammar_schemas_bound_every_free_text_string() -> None:
    from simulator.providers._schema import cap_string_lengths

    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "evidence": {"type": "array", "items": {"type": "string"}},
            "result": {"type": "string", "enum": ["pass", "fail"]},
            "short": {"type": "string", "maxLength": 10},
        },
    }
    capped = cap_string_lengths(schema, 50)
    props = capped["properties"]
    assert props["reasoning"]["maxLength"] == 50 and props["evidence"]["items"]["maxLength"] == 50
    assert "maxLength" not in props["result"] and props["short"]["maxLength"] == 10
    assert "maxLength" not in schema["properties"]["reasoning"]  # the caller's schema is not changed
