"""The per-call path under both providers: straight to the SDK's own aiohttp session, the SDK's headers and
errors, gzip answers, the slower paths for other HTTP clients, and JSON that orjson refuses."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from typing import Any

import anthropic as anthropic_sdk
import openai as openai_sdk
import pytest

from simulator.config.suite import ProviderSettings
from simulator.eventloop import loop_name, run_async
from simulator.providers._sdkpost import SdkPost, dumps_json, loads_json
from simulator.providers._wire import WirePost
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.openai import OpenAIProvider
from simulator.record.transcript import Turn
from simulator.testing.fake_llm import FakeLLMServer, FakeReply
from simulator.users.llm_user import LLMUser
from tests.conftest import close_after_test


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    OpenAIProvider.schema_modes.clear()


def _request(text: str = "hello there") -> ModelRequest:
    return ModelRequest(model="m", system="be brief", messages=[ChatMessage(role="user", content=text)])


def _anthropic(server: FakeLLMServer) -> AnthropicProvider:
    return close_after_test(AnthropicProvider(ProviderSettings(base_url=server.base_url)))


def _openai(server: FakeLLMServer) -> OpenAIProvider:
    return close_after_test(OpenAIProvider(ProviderSettings(base_url=server.openai_base_url)))


MAKERS = [_anthropic, _openai]


async def _public_create(provider: Any) -> None:
    """The same call through the SDK's public, typed `create(...)`."""
    messages = [{"role": "user", "content": "public"}]
    if isinstance(provider, AnthropicProvider):
        await provider._client.messages.create(model="m", max_tokens=20, messages=messages)
    else:
        await provider._client.chat.completions.create(model="m", max_tokens=20, messages=messages)


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("compress", [False, True])
async def test_calls_go_out_without_the_sdk_with_the_sdk_headers(make: Any, compress: bool) -> None:
    reply = lambda call: f"answer to {call.messages[-1].content}"  # noqa: E731
    async with FakeLLMServer(reply, compress=compress) as server:
        provider = make(server)
        assert isinstance(provider._post, WirePost)  # the SDK's request, built without the SDK
        assert provider._sdk_client is None
        answers = [await provider.generate(_request(f"question {i}")) for i in range(3)]
        await _public_create(provider)
    assert [a.text for a in answers] == [f"answer to question {i}" for i in range(3)]
    assert all(a.usage.calls == 1 and a.usage.output_tokens > 0 for a in answers)
    ours, public = server.calls[0].headers, server.calls[-1].headers
    # The SDK's own headers (key, version, user agent, timeouts), exactly those its public path sends.
    assert set(ours) == set(public)
    # Values too, but the body's length, the port and the timeout (the public path sends its default
    # as the unset sentinel's name; ours is the client's timeout).
    varies = ("content-length", "host", "x-stainless-timeout")
    assert {k: v for k, v in ours.items() if k not in varies} == {
        k: v for k, v in public.items() if k not in varies
    }
    key = "test-anthropic-key" if make is _anthropic else "test-openai-key"
    assert any(key in value for value in ours.values())


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize(
    ("reply", "kind", "status"),
    [
        (FakeReply(status=429, retry_after=1.5), "rate_limit", 429),
        (FakeReply(status=503), "transient", 503),
        (FakeReply(status=404, error_type="not_found_error"), "permanent", 404),
        (FakeReply(status=401, error_type="authentication_error"), "permanent", 401),
    ],
)
async def test_gzip_error_answers_become_the_sdk_errors(
    make: Any, reply: FakeReply, kind: str, status: int
) -> None:
    async with FakeLLMServer(lambda call: reply, compress=True) as server:
        with pytest.raises(ProviderError) as caught:
            await make(server).generate(_request())
    assert (caught.value.kind, caught.value.status) == (kind, status)
    if kind == "rate_limit":
        assert caught.value.retry_after == 1.5  # read from the answer's headers, through the SDK's error
    if status == 404:
        assert "check the model name and the base_url" in str(caught.value)


@pytest.mark.parametrize("sdk", [anthropic_sdk, openai_sdk])
async def test_other_http_clients_take_the_clients_own_send(sdk: Any) -> None:
    """A client without the vendored aiohttp transport (the SDK's httpx default) still posts and reads."""
    path = "/v1/messages" if sdk is anthropic_sdk else "/chat/completions"
    async with FakeLLMServer(lambda call: "plain") as server:
        base = server.base_url if sdk is anthropic_sdk else server.openai_base_url
        client = (sdk.AsyncAnthropic if sdk is anthropic_sdk else sdk.AsyncOpenAI)(api_key="k", base_url=base)
        post = SdkPost(sdk, client, path)
        payload: dict[str, Any] = {
            "model": "m",
            "max_tokens": 20,
            "messages": [{"role": "user", "content": "hi"}],
        }
        try:
            body, _ = await post(payload)
        finally:
            await client.close()
    assert post._direct is None and post._fast
    text = body["content"][0]["text"] if sdk is anthropic_sdk else body["choices"][0]["message"]["content"]
    assert text == "plain"


@pytest.mark.parametrize(
    "payload",
    [
        {"text": "a lone surrogate \ud800 here"},
        {1: "an integer key", "nested": [{2.5: "a float key"}]},
        {"emoji": "\U0001f600", "quote": 'say "hi"', "nan": "NaN"},
        ["a list", None, True, 3.25],
    ],
)
def test_request_bodies_encode_whatever_json_encodes(payload: Any) -> None:
    assert json.loads(dumps_json(payload)) == json.loads(json.dumps(payload))


@pytest.mark.parametrize(
    "body",
    [b'{"text": "\\ud800 lone"}', b'{"a": [1, 2.5, null, true]}', b'"\\udfff"', b'{"t": "caf\\u00e9"}'],
)
def test_answers_decode_whatever_json_decodes(body: bytes) -> None:
    assert loads_json(body) == json.loads(body)


def test_the_fast_loop_runs_commands_and_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    async def which() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    if os.name != "nt":  # uvloop is a dependency wherever it exists
        assert loop_name() == "uvloop"
        assert run_async(which()).startswith("uvloop")
    monkeypatch.setenv("SIMULATOR_EVENT_LOOP", "asyncio")
    assert loop_name() == "asyncio"
    assert run_async(which()).startswith("asyncio")


def _turn(index: int, role: str, text: str) -> Turn:
    return Turn(index=index, role=role, messages=[text], started_at=datetime.now(UTC))  # type: ignore[arg-type]


def _fresh_messages(turns: list[Turn]) -> list[tuple[str, str]]:
    user = LLMUser(None, "m", "persona", None, 100)  # type: ignore[arg-type]
    return [(m.role, m.content) for m in user._messages(turns)]


@pytest.mark.parametrize("lengths", [[0, 1, 2, 3, 4], [4, 2, 4], [1, 1, 3], [3, 0, 2]])
def test_the_users_history_grows_with_the_conversation_and_matches_a_rebuild(lengths: list[int]) -> None:
    turns = [_turn(i, "user" if i % 2 == 0 else "bot", f"message {i}") for i in range(4)]
    user = LLMUser(None, "m", "persona", None, 100)  # type: ignore[arg-type]
    for n in lengths:
        assert [(m.role, m.content) for m in user._messages(turns[:n])] == _fresh_messages(turns[:n])
    # A different conversation (new turn objects, same texts but one) is rebuilt, not appended to.
    other = [_turn(i, "user" if i % 2 == 0 else "bot", f"other {i}") for i in range(3)]
    assert [(m.role, m.content) for m in user._messages(other)] == _fresh_messages(other)
