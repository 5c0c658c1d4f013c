"""A status line's reason phrase holds what RFC 9112 allows (the tab, space, visible ASCII and obs-text) or
the answer is malformed: llhttp (the pool's parser and aiohttp's) lets any byte but CR and LF through, so
`HTTP/1.1 200 O\\x00K` or an escape sequence was an answer. Now it is a network error, the same on the
wire path and the SDK's, informational heads and streams included, and no reason phrase is quoted where a
terminal or a report shows it (providers/_httppool.py `reason_fault`, bots/http_bot.py `identify`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from simulator.bots.http_bot import HttpBotFactory
from simulator.config.bots import HttpBotConfig
from simulator.config.suite import ProviderSettings
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError
from simulator.providers.openai import OpenAIProvider
from tests.conftest import close_after_test
from tests.support.raw_answer import RawAnswer
from tests.support.raw_sse import anthropic_events, openai_events
from tests.support.two_paths import APIS, GOOD, both_paths, same_failure


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def _answer(status_line: bytes, body: bytes, *headers: bytes) -> bytes:
    lines = [status_line, b"Content-Type: application/json", *headers, b"Content-Length: %d" % len(body)]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


# A reason phrase with a character RFC 9112 does not allow in it, and the character the error names.
REFUSED = {
    "NUL": (b"O\x00K", "0x00"),
    "escape sequence": (b"\x1b[31mOK\x1b[0m", "0x1b"),
    "delete": (b"OK\x7f", "0x7f"),
    "start of heading": (b"\x01OK", "0x01"),
    "backspace": (b"OK\x08\x08", "0x08"),
    "vertical tab": (b"O\x0bK", "0x0b"),
    "form feed": (b"OK\x0c", "0x0c"),
    "unit separator": (b"O\x1fK", "0x1f"),
}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [b"200", b"503"])
@pytest.mark.parametrize(("reason", "byte"), REFUSED.values(), ids=REFUSED.keys())
async def test_a_control_character_in_the_reason_phrase_is_no_http_on_both_paths(
    api: str, status: bytes, reason: bytes, byte: str
) -> None:
    raw = _answer(b"HTTP/1.1 " + status + b" " + reason, json.dumps(GOOD[api]).encode())
    error = same_failure(await both_paths(api, raw))
    assert (error.kind, error.status) == ("transient", None)  # as any answer that is not HTTP/1.1
    assert str(error).endswith(
        f"was not a whole HTTP/1.1 answer (the status line's reason phrase holds the control character "
        f"{byte}, which HTTP does not allow there)"
    ), str(error)
    assert "\x1b" not in str(error) and "\x00" not in str(error)


@pytest.mark.parametrize("api", APIS)
async def test_a_bare_carriage_return_in_the_reason_phrase_is_no_http_on_both_paths(api: str) -> None:
    raw = _answer(b"HTTP/1.1 200 O\rK", json.dumps(GOOD[api]).encode())
    for error in await both_paths(api, raw):
        assert isinstance(error, ProviderError) and error.kind == "transient", error
        assert "was not a whole HTTP/1.1 answer" in str(error) and "\r" not in str(error)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "reason",
    [b"OK", b"", b"All \tgood", b"caf\xe9", b"\x80\xff", b"Very Fine Indeed, Thanks" * 20],
    ids=["plain", "empty", "tab", "latin-1", "obs-text", "long"],
)
async def test_what_rfc_9112_allows_in_a_reason_phrase_is_read_on_both_paths(api: str, reason: bytes) -> None:
    for response in await both_paths(api, _answer(b"HTTP/1.1 200 " + reason, json.dumps(GOOD[api]).encode())):
        assert isinstance(response, ModelResponse) and response.text == "fine", response


async def test_an_informational_heads_reason_phrase_is_checked_too() -> None:
    """The pool reads a 100 Continue's head itself (aiohttp's session skips it)."""
    from tests.support.two_paths import provider_on

    raw = b"HTTP/1.1 100 Con\x1btinue\r\n\r\n" + _answer(
        b"HTTP/1.1 200 OK", json.dumps(GOOD["openai"]).encode()
    )
    async with RawAnswer(raw) as server:
        with pytest.raises(ProviderError) as caught:
            await provider_on("openai", server.url, "wire").generate(
                ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")])
            )
    assert caught.value.kind == "transient"
    assert "reason phrase holds the control character 0x1b" in str(caught.value)


STREAMED: dict[str, Callable[..., list[str]]] = {"openai": openai_events, "anthropic": anthropic_events}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(("reason", "byte"), [REFUSED["NUL"], REFUSED["escape sequence"], REFUSED["delete"]])
async def test_a_streamed_answers_reason_phrase_is_checked(api: str, reason: bytes, byte: str) -> None:
    body = "".join(STREAMED[api]()).encode()
    raw = (
        b"HTTP/1.1 200 " + reason + b"\r\nContent-Type: text/event-stream\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    async with RawAnswer(raw) as server:
        provider: Any = (
            OpenAIProvider(ProviderSettings(base_url=server.url + "/v1"))
            if api == "openai"
            else AnthropicProvider(ProviderSettings(base_url=server.url))
        )
        request = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")], stream=True)
        with pytest.raises(ProviderError) as caught:
            await close_after_test(provider).generate(request)
    assert caught.value.kind == "transient"
    assert f"reason phrase holds the control character {byte}" in str(caught.value)


@pytest.mark.parametrize("reason", [b"\x1b[31mNot Found\x1b[0m", b"Not\x07Found", b"\x1b]52;c;aGk=\x07"])
async def test_a_bot_version_urls_reason_phrase_is_never_quoted(reason: bytes) -> None:
    """Before, httpx's error for the 404 quoted the phrase (h11 lets an escape through) into the bot's
    identity, which the run records and the report shows."""
    async with RawAnswer(b"HTTP/1.1 404 " + reason + b"\r\nContent-Length: 0\r\n\r\n") as server:
        url = server.url
        factory = HttpBotFactory(
            HttpBotConfig(type="http", url=f"{server.url}/chat", version_url=f"{server.url}/version")
        )
        try:
            answered = await factory.identify()
        finally:
            await factory.aclose()
    assert answered == {f"{url}/version did not answer": "it answered HTTP 404"}
