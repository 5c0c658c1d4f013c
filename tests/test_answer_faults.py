"""Faults in a provider's answer that passed, or were read differently by the two paths, before: a control
character in a header's value, a token count that is not one, an error status whose body is in an encoding
the request did not ask for. Each is one classified ProviderError, the same on the wire path (the engine's
own pool) and the SDK's, said in words (providers/_httppool.py, _answer.py, _http.py); streams included."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from simulator.config.suite import ProviderSettings
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError
from simulator.providers.openai import OpenAIProvider
from simulator.record.transcript import Usage
from tests.conftest import close_after_test
from tests.support.raw_answer import answer
from tests.support.raw_sse import RawSse, anthropic_events, openai_events
from tests.support.two_paths import APIS, GOOD, both_paths, same_failure

API_NAMES = {"openai": "a Chat Completions answer", "anthropic": "a Messages API answer"}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def _json(value: Any, *headers: bytes, status: bytes = b"200 OK") -> bytes:
    return answer(status, b"Content-Type: application/json", *headers, body=json.dumps(value).encode())


# --- a control character in a header's value (RFC 9110 5.5): no HTTP, on both paths, whatever the status

CONTROL = {
    "NUL in a header nobody reads": (b"X-Trace: a\x00b", "0x00"),
    "NUL after the content type": (b"X-Type: application/json\x00", "0x00"),
    "NUL alone": (b"X-Trace: \x00", "0x00"),
    "start of heading": (b"X-Trace: a\x01b", "0x01"),
    "escape sequence": (b"X-Trace: \x1b[31mred", "0x1b"),
    "vertical tab": (b"X-Trace: a\x0bb", "0x0b"),
    "delete": (b"X-Trace: end\x7f", "0x7f"),
}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [b"200 OK", b"429 Too Many Requests", b"503 Service Unavailable"])
@pytest.mark.parametrize(("header", "byte"), CONTROL.values(), ids=CONTROL.keys())
async def test_a_control_character_in_a_headers_value_is_no_http_on_both_paths(
    api: str, status: bytes, header: bytes, byte: str
) -> None:
    error = same_failure(await both_paths(api, _json(GOOD[api], header, status=status)))
    assert (error.kind, error.status) == ("transient", None)  # as any answer that is not HTTP/1.1
    assert str(error).startswith("the answer from http://127.0.0.1:")
    assert str(error).endswith(
        f"was not a whole HTTP/1.1 answer (a header's value holds the control character {byte}, "
        "which HTTP does not allow in a header)"
    )


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "header",
    [b"X-Trace: a\tb", b"X-Trace: caf\xe9", b"X-Trace: \x80\xff", b"X-Trace:", b"X-Fold: a\r\n\tb"],
    ids=["tab", "latin-1", "obs-text", "empty", "folded with a tab"],
)
async def test_what_rfc_9110_allows_in_a_headers_value_is_read_on_both_paths(api: str, header: bytes) -> None:
    for response in await both_paths(api, _json(GOOD[api], header)):
        assert isinstance(response, ModelResponse) and response.text == "fine", response


# --- a token count that is not one: refused by its field, never added to a run's cost or token budget

FIELDS = {
    "openai": ("prompt_tokens", "completion_tokens", "prompt_tokens_details.cached_tokens"),
    "anthropic": ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"),
}
NOT_COUNTS = {
    "negative": (-5, "-5"),
    "a fraction": (1.5, "1.5"),
    "text": ("12", 'text ("12")'),
    "huge": (10**12, "1000000000000"),
    "a boolean": (True, "a boolean (true)"),
    "a list": ([3], "a list ([3])"),
}
BOUND = "which is not a token count (a whole number from 0 to 100,000,000)"


def _usage(field: str, value: Any) -> dict[str, Any]:
    """A usage object with `value` at the dotted `field`."""
    if "." in field:
        outer, inner = field.split(".")
        return {"prompt_tokens": 10, outer: {inner: value}}
    return {field: value}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(("value", "said"), NOT_COUNTS.values(), ids=NOT_COUNTS.keys())
async def test_a_token_count_that_is_not_one_is_refused_naming_its_field(
    api: str, value: Any, said: str
) -> None:
    for field in FIELDS[api]:
        body = {**GOOD[api], "usage": _usage(field, value)}
        error = same_failure(await both_paths(api, _json(body)))
        assert error.kind == "transient"  # as any JSON that is not the API's answer
        assert (
            f"is JSON but not {API_NAMES[api]}: usage.{field} is {said}, {BOUND}; check that base_url"
            in str(error)
        )


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("usage", "said"),
    [("many", "usage is text, not an object"), ([1, 2], "usage is a list, not an object")],
)
async def test_a_usage_that_is_not_an_object_is_refused_in_words(api: str, usage: Any, said: str) -> None:
    error = same_failure(await both_paths(api, _json({**GOOD[api], "usage": usage})))
    assert error.kind == "transient" and f"is JSON but not {API_NAMES[api]}: {said};" in str(error)


async def test_cached_tokens_details_that_are_not_an_object_are_refused_in_words() -> None:
    body = {**GOOD["openai"], "usage": {"prompt_tokens": 3, "prompt_tokens_details": 5}}
    error = same_failure(await both_paths("openai", _json(body)))
    assert "usage.prompt_tokens_details is a number, not an object" in str(error)


@pytest.mark.parametrize(
    ("api", "usage", "counted"),
    [
        ("openai", None, Usage(calls=1)),
        ("openai", {}, Usage(calls=1)),
        ("openai", {"prompt_tokens": None, "completion_tokens": 0}, Usage(calls=1)),
        ("openai", {"prompt_tokens": 12.0, "completion_tokens": 3}, Usage(input_tokens=12, output_tokens=3, calls=1)),
        (
            "openai",
            {"prompt_tokens": 100_000_000, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 7}},
            Usage(input_tokens=100_000_000, output_tokens=1, cached_input_tokens=7, calls=1),
        ),
        ("anthropic", None, Usage(calls=1)),
        (
            "anthropic",
            {"input_tokens": 4, "output_tokens": 2.0, "cache_read_input_tokens": 3, "cache_creation_input_tokens": None},
            Usage(input_tokens=7, output_tokens=2, cached_input_tokens=3, calls=1),
        ),
    ],
    ids=["none", "empty", "nulls", "a whole float", "the most", "anthropic none", "anthropic whole float"],
)  # fmt: skip
async def test_counts_missing_or_whole_are_read_on_both_paths(api: str, usage: Any, counted: Usage) -> None:
    body = {key: value for key, value in GOOD[api].items() if key != "usage"}
    if usage is not None:
        body["usage"] = usage
    for response in await both_paths(api, _json(body)):
        assert isinstance(response, ModelResponse) and response.usage == counted, response


ASK = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")], stream=True)


def _streaming(api: str, server: RawSse) -> Any:
    if api == "openai":
        return close_after_test(OpenAIProvider(ProviderSettings(base_url=server.url + "/v1")))
    return close_after_test(AnthropicProvider(ProviderSettings(base_url=server.url)))


# (api, the count's text in the stream, the field as the message names it)
STREAMED = [
    ("openai", '"prompt_tokens": 5', "usage.prompt_tokens"),
    ("openai", '"completion_tokens": 9', "usage.completion_tokens"),
    ("anthropic", '"input_tokens": 5', "message.usage.input_tokens"),
    ("anthropic", '"output_tokens": 9', "usage.output_tokens"),
]


@pytest.mark.parametrize(("api", "count", "field"), STREAMED)
@pytest.mark.parametrize(("value", "said"), NOT_COUNTS.values(), ids=NOT_COUNTS.keys())
async def test_a_streamed_token_count_that_is_not_one_is_a_stream_fault(
    api: str, count: str, field: str, value: Any, said: str
) -> None:
    events = openai_events() if api == "openai" else anthropic_events()
    name = count.split(":")[0]
    bad = [event.replace(count, f"{name}: {json.dumps(value)}") for event in events]
    assert bad != events
    async with RawSse(bad) as server:
        with pytest.raises(ProviderError) as caught:
            await _streaming(api, server).generate(ASK)
        assert server.requests == 1  # a fault the same server repeats: not retried
    error = caught.value
    assert error.kind == "permanent"
    assert f"has a bad token count: {field} is {said}, {BOUND}; it is not used" in str(error), str(error)


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_without_usage_counts_nothing(api: str) -> None:
    events = openai_events() if api == "openai" else anthropic_events()
    events = [e.replace('"usage": {', '"no_usage": {') for e in events]
    async with RawSse(events) as server:
        response = await _streaming(api, server).generate(ASK)
    assert response.usage == Usage(calls=1)


# --- an error status whose body is in an encoding not asked for: classified by its status on both paths

ENCODINGS = {
    "br": (b"br", b"\x1b\x03\x00\xf8\xa5\x92\x8e\x15"),
    "zstd": (b"zstd", b"\x28\xb5\x2f\xfd\x00\x58\x01\x00\x00"),
    "unknown": (b"x-compress-9", b"\x1f\x9d\x90{\x00"),
    "two layers": (b"gzip, gzip", gzip.compress(gzip.compress(b'{"error": "x"}', mtime=0), mtime=0)),
}
STATUSES = [
    (b"429 Too Many Requests", "rate_limit", "429 Too Many Requests"),
    (b"500 Internal Server Error", "transient", "500 Internal Server Error"),
    (b"503 Service Unavailable", "transient", "503 Service Unavailable"),
    (b"400 Bad Request", "permanent", "400 Bad Request; check the request settings"),
    (b"404 Not Found", "permanent", "404 Not Found; check the model name"),
]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(("status", "kind", "words"), STATUSES, ids=[s[0][:3].decode() for s in STATUSES])
@pytest.mark.parametrize(("encoding", "body"), ENCODINGS.values(), ids=ENCODINGS.keys())
async def test_an_error_status_in_an_encoding_not_asked_for_is_classified_by_its_status(
    api: str, status: bytes, kind: str, words: str, encoding: bytes, body: bytes
) -> None:
    raw = answer(status, b"Content-Encoding: " + encoding, b"Retry-After: 2", body=body)
    error = same_failure(await both_paths(api, raw))
    assert (error.kind, error.status) == (kind, int(status[:3]))
    assert f"answered {words}" in str(error)  # its body is no text: nothing of it is said
    if kind != "permanent":
        assert error.retry_after == 2.0


@pytest.mark.parametrize("api", APIS)
async def test_a_gzip_error_body_is_read_on_both_paths(api: str) -> None:
    body = gzip.compress(b'{"error": {"message": "warming up"}}')
    error = same_failure(
        await both_paths(api, answer(b"503 Service Unavailable", b"Content-Encoding: gzip", body=body))
    )
    assert (error.kind, error.status) == ("transient", 503)
    assert "answered 503: warming up" in str(error)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [b"200 OK", b"503 Service Unavailable"])
async def test_a_damaged_gzip_body_is_said_the_same_on_both_paths(api: str, status: bytes) -> None:
    body = gzip.compress(json.dumps(GOOD[api]).encode())[:10] + b"\xff" * 40  # no deflate block
    error = same_failure(await both_paths(api, answer(status, b"Content-Encoding: gzip", body=body)))
    assert error.kind == "transient"
    assert "could not be decoded (the answer's gzip body is damaged" in str(error)
