"""Streamed answers through the real openai and anthropic SDKs, from a raw SSE server: a stream cut short is
an error that names what was missing, never a whole answer; what SSE says to ignore is ignored; a fault the
same server repeats is not retried, a broken connection is (within the provider's bounds)."""

from __future__ import annotations

import json

import pytest

from simulator.config.suite import ProviderSettings
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.hub import ModelClient
from simulator.providers.openai import OpenAIProvider
from tests.conftest import close_after_test
from tests.support.raw_sse import WORDS, RawSse, anthropic_events, openai_events

WHOLE = "".join(WORDS)
ASK = ModelRequest(model="m", messages=[ChatMessage(role="user", content="chest pain")], stream=True)


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")


def _openai(server: RawSse) -> OpenAIProvider:
    return close_after_test(OpenAIProvider(ProviderSettings(base_url=server.url + "/v1")))


def _anthropic(server: RawSse) -> AnthropicProvider:
    return close_after_test(AnthropicProvider(ProviderSettings(base_url=server.url)))


async def _fails(provider: OpenAIProvider | AnthropicProvider) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await provider.generate(ASK)
    return caught.value


# --- cut short: each a permanent error naming the missing end marker, never the first words as an answer

OPENAI_CUT = {
    "body ends, no finish_reason, no [DONE]": (
        openai_events(WORDS[:5], finish=False, done=False),
        "at the end of the HTTP body",
    ),
    "[DONE] before any finish_reason": (openai_events(WORDS[:5], finish=False), "with data: [DONE]"),
    "no chunk at all": ([], "at the end of the HTTP body"),
    "last event cut in its JSON": (
        [*openai_events(WORDS[:5], finish=False, done=False), 'data: {"id": "c1", "choi'],
        "in the middle of an event",
    ),
    "last event without its blank line": (
        [*openai_events(WORDS[:5], finish=False, done=False), 'data: {"choices": []}\n'],
        "in the middle of an event",
    ),
}


@pytest.mark.parametrize("chunks, how", OPENAI_CUT.values(), ids=OPENAI_CUT.keys())
async def test_an_openai_stream_that_ends_before_its_finish_reason_is_an_error(
    chunks: list[str], how: str
) -> None:
    async with RawSse(chunks) as server:
        error = await _fails(_openai(server))
    assert error.kind == "permanent"
    assert "without a finish_reason" in str(error) and how in str(error)
    assert "stream: false" in str(error)  # the fix


ANTHROPIC_CUT = {
    "no message_stop after the deltas": (
        anthropic_events(WORDS[:5], stop=False),
        "at the end of the HTTP body",
    ),
    "message_delta but no message_stop": (anthropic_events()[:-1], "at the end of the HTTP body"),
    "no event at all": ([], "at the end of the HTTP body"),
    "last event cut in its JSON": (
        [*anthropic_events(WORDS[:5], stop=False), 'event: content_block_delta\ndata: {"type": "cont'],
        "in the middle of an event",
    ),
}


@pytest.mark.parametrize("chunks, how", ANTHROPIC_CUT.values(), ids=ANTHROPIC_CUT.keys())
async def test_an_anthropic_stream_that_ends_before_message_stop_is_an_error(
    chunks: list[str], how: str
) -> None:
    async with RawSse(chunks) as server:
        error = await _fails(_anthropic(server))
    assert error.kind == "permanent"
    assert "without a message_stop event" in str(error) and how in str(error)


async def test_a_whole_answer_is_still_whole_when_its_trailing_done_lost_its_blank_line() -> None:
    async with RawSse([*openai_events(done=False), "data: [DONE]\n"]) as server:
        assert (await _openai(server).generate(ASK)).text == WHOLE


# --- what SSE says to ignore is ignored, the SDK's reading matched (Anthropic) or the standard's (OpenAI)


def _openai_spoken(events: list[str]) -> dict[str, list[str]]:
    """The same whole answer written the ways a server may legally write SSE."""
    return {
        "an event without data (event: ping)": [*events[:3], "event: ping\n\n", *events[3:]],
        "comments as keep-alives": [": keep-alive\n\n", *(": ping\n" + e for e in events)],
        "CRLF line ends": [e.replace("\n", "\r\n") for e in events],
        "CR line ends": [e.replace("\n", "\r") for e in events],
        "id and retry fields": ["retry: 3000\n\n", *("id: 7\n" + e for e in events)],
        "one byte a chunk (CRLF split across chunks)": list("".join(e.replace("\n", "\r\n") for e in events)),
        "a byte order mark first": ["\ufeff" + events[0], *events[1:]],
        "empty data lines": ["data:\n\n", *events],
    }


@pytest.mark.parametrize("name", list(_openai_spoken(openai_events())))
async def test_an_openai_stream_in_any_legal_sse_spelling_is_read_whole(name: str) -> None:
    async with RawSse(_openai_spoken(openai_events())[name]) as server:
        response = await _openai(server).generate(ASK)
    assert response.text == WHOLE and response.usage.output_tokens == len(WORDS)


@pytest.mark.parametrize(
    "extra",
    ["event: ping\ndata: {\"type\": \"ping\"}\n\n", "event: ping\n\n", ": comment\n\n", "data: {\"type\": \"x\"}\n\n",
     "event: some_new_event\ndata: {\"type\": \"some_new_event\"}\n\n"],
    ids=["ping with data", "ping without data", "comment", "unnamed event", "unknown event type"],
)  # fmt: skip
async def test_an_anthropic_stream_skips_what_the_sdk_skips(extra: str) -> None:
    events = anthropic_events()
    async with RawSse([*events[:3], extra, *events[3:]]) as server:
        response = await _anthropic(server).generate(ASK)
    assert response.text == WHOLE and response.usage.output_tokens == 9


# --- malformed and failed streams: the cause in words, and a retry only where one can help


@pytest.mark.parametrize(
    "bad",
    ["data: not json\n\n", "data: [1, 2]\n\n", 'data: {"choices": 3}\n\n', 'data: {"choices": [{"delta": {"tool_calls": [1]}}]}\n\n'],
    ids=["not JSON", "a JSON list", "choices not a list", "a tool call not an object"],
)  # fmt: skip
async def test_a_malformed_openai_event_is_a_permanent_error_in_words(bad: str) -> None:
    events = openai_events()
    async with RawSse([*events[:3], bad, *events[3:]]) as server:
        error = await _fails(_openai(server))
    assert error.kind == "permanent" and "JSONDecodeError" not in str(error)
    assert "streamed answer from http://127.0.0.1" in str(error) and "stream: false" in str(error)


def _openai_error(kind: str) -> str:
    return f"data: {json.dumps({'error': {'message': 'upstream said no', 'type': kind}})}\n\n"


def _anthropic_error(kind: str) -> str:
    return f"event: error\ndata: {json.dumps({'type': 'error', 'error': {'type': kind, 'message': 'upstream said no'}})}\n\n"


@pytest.mark.parametrize(
    "api, kind, expected",
    [
        ("openai", "server_error", "transient"),
        ("openai", "invalid_request_error", "permanent"),
        ("openai", "rate_limit_exceeded", "rate_limit"),
        ("anthropic", "overloaded_error", "transient"),
        ("anthropic", "api_error", "transient"),
        ("anthropic", "invalid_request_error", "permanent"),
    ],
)
async def test_an_error_event_in_the_stream_is_classified_by_its_type(
    api: str, kind: str, expected: str
) -> None:
    if api == "openai":
        chunks, make = [*openai_events(WORDS[:3], finish=False, done=False), _openai_error(kind)], _openai
    else:
        chunks, make = [*anthropic_events(WORDS[:3], stop=False), _anthropic_error(kind)], _anthropic
    async with RawSse(chunks) as server:
        error = await _fails(make(server))  # type: ignore[operator]
    assert error.kind == expected
    assert f"sent an error in the middle of the streamed answer: upstream said no ({kind})" in str(error)
    assert "APIError" not in str(error)
    assert (error.status == 529) == (kind == "overloaded_error")


@pytest.mark.parametrize("make", [_openai, _anthropic])
async def test_a_connection_cut_in_the_middle_of_the_stream_is_a_transient_error_in_words(
    make: object,
) -> None:
    events = (
        openai_events(WORDS[:5], finish=False, done=False)
        if make is _openai
        else anthropic_events(stop=False)
    )
    async with RawSse(events, end="close") as server:
        error = await _fails(make(server))  # type: ignore[operator]
    assert error.kind == "transient" and "broke in the middle of the streamed answer" in str(error)


def _client(provider: OpenAIProvider, attempts: int) -> ModelClient:
    settings = ProviderSettings(max_attempts=attempts, backoff_initial_s=0.01, backoff_max_s=0.01)
    return ModelClient(provider, settings=settings, provider_name="openai")


async def test_a_deterministic_stream_fault_is_tried_once_and_a_cut_connection_a_bounded_number_of_times() -> (
    None
):
    async with RawSse(openai_events(WORDS[:5], finish=False)) as early:
        with pytest.raises(ProviderError, match="without a finish_reason"):
            await _client(_openai(early), attempts=4).generate(ASK)
        assert early.requests == 1
    async with RawSse(openai_events(WORDS[:5], finish=False, done=False), end="close") as cut:
        with pytest.raises(ProviderError, match="broke in the middle"):
            await _client(_openai(cut), attempts=3).generate(ASK)
        assert cut.requests == 3
