"""Failures said as they are (issue 11, item 9): a refused connection is never called a timeout, and a
timeout says how long was waited; for both providers through their real SDKs, and for the HTTP bot."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from simulator.bots.base import BotError
from simulator.bots.http_bot import HttpSession
from simulator.config.providers import ProviderSettings
from simulator.providers import create_provider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from tests.conftest import close_after_test

REQUEST = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")])


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield int(server.getsockname()[1])


def _base_url(api: str, port: int) -> str:
    return f"http://127.0.0.1:{port}" + ("/v1" if api == "openai" else "")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_refused_connection_is_not_called_a_timeout(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    url = _base_url(api, _closed_port())
    provider = close_after_test(create_provider(api, ProviderSettings(base_url=url, timeout_s=5)))
    with pytest.raises(ProviderError) as caught:
        await provider.generate(REQUEST)
    message = str(caught.value)
    assert message.startswith(f"connection refused by {url}") and "timed out" not in message
    assert caught.value.kind == "transient"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("timeout_s", [0.3, 0.75])
async def test_a_timeout_says_how_long_was_waited(
    api: str, timeout_s: float, silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    settings = ProviderSettings(base_url=_base_url(api, silent_port), timeout_s=timeout_s)
    provider = close_after_test(create_provider(api, settings))
    with pytest.raises(ProviderError) as caught:
        await provider.generate(REQUEST)
    assert f"did not answer within {timeout_s:g} s (the provider's timeout_s)" in str(caught.value)


@pytest.mark.parametrize("timeout_s", [0.3, 0.6])
async def test_the_http_bot_says_refused_or_how_long_it_waited(timeout_s: float, silent_port: int) -> None:
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        refused_url = f"http://127.0.0.1:{_closed_port()}/chat"
        with pytest.raises(BotError) as refused:
            await HttpSession(client, refused_url, "c", timeout_s).send("hi", 0)
        assert str(refused.value) == f"connection refused by {refused_url}: is the bot running there?"
        with pytest.raises(BotError) as slow:
            await HttpSession(client, f"http://127.0.0.1:{silent_port}/chat", "c", timeout_s).send("hi", 0)
        assert f"did not answer within {timeout_s:g} s (bot.timeout_s" in str(slow.value)
