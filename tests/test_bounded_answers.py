"""Every bot turn and provider call has a total deadline and a byte cap (issue 30, item 6), not only a
per-read timeout: a bot or provider that trickles a byte at a time, an endless chunked stream and a gzip
bomb each end as a recorded error within the deadline and the cap."""

from __future__ import annotations

import asyncio
import functools
import gzip
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from simulator.bots.base import BotError
from simulator.bots.http_bot import HttpSession
from simulator.config.suite import ProviderSettings
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.openai import OpenAIProvider
from tests.conftest import close_after_test

Behaviour = Callable[[asyncio.StreamWriter], Awaitable[None]]
JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


async def _trickle(writer: asyncio.StreamWriter) -> None:
    """Headers, then one byte every 0.2 s of a body that never ends in time."""
    writer.write(JSON_HEAD + b"Content-Length: 100000\r\n\r\n")
    for _ in range(1000):
        writer.write(b" ")
        await writer.drain()
        await asyncio.sleep(0.2)


async def _endless(writer: asyncio.StreamWriter) -> None:
    """A chunked stream that never ends, as fast as it is read."""
    writer.write(JSON_HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 65536
    while True:
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await writer.drain()


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b"\0" * 50_000_000, compresslevel=9)


async def _gzip_bomb(writer: asyncio.StreamWriter) -> None:
    """A 50 KB gzip body that inflates to 50 MB."""
    bomb = _bomb()
    writer.write(JSON_HEAD + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb) + bomb)
    await writer.drain()


BEHAVIOURS = {"trickle": _trickle, "endless": _endless, "gzip-bomb": _gzip_bomb}


async def _serve(behaviour: Behaviour) -> AsyncIterator[str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            await behaviour(writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()


def _deadline(name: str) -> float:
    """The whole answer's deadline: short where the deadline is what is tested (the trickle); elsewhere the cap
    must fire first, so a loaded machine inflating the bomb or reading 1 MB must not let the deadline win."""
    return 1.5 if name == "trickle" else 15.0


@pytest.mark.parametrize("name", sorted(BEHAVIOURS))
async def test_a_hostile_bot_answer_is_a_bot_error_within_its_deadline_and_cap(name: str) -> None:
    _bomb()
    async for url in _serve(BEHAVIOURS[name]):
        async with httpx.AsyncClient(timeout=1.0) as client:
            session = HttpSession(
                client, f"{url}/chat", "c#0", timeout_s=_deadline(name), max_bytes=1_000_000
            )
            start = time.monotonic()
            with pytest.raises(BotError) as caught:
                await session.send("hello", 1)
            assert time.monotonic() - start < _deadline(name) + 8.5
        expected = "timeout" if name == "trickle" else "invalid_reply"
        assert caught.value.kind == expected, str(caught.value)
        assert ("deadline" if name == "trickle" else "longer than 1,000,000 bytes") in str(caught.value)


def _request() -> ModelRequest:
    return ModelRequest(model="m", system="s", messages=[ChatMessage(role="user", content="hi")])


@pytest.mark.parametrize("name", ["trickle", "endless", "gzip-bomb"])
@pytest.mark.parametrize("provider", [OpenAIProvider, AnthropicProvider])
async def test_a_provider_that_trickles_or_never_ends_is_cut(
    name: str, provider: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    monkeypatch.setattr("simulator.providers._sdkpost.MAX_ANSWER_BYTES", 2_000_000)
    _bomb()
    async for url in _serve(BEHAVIOURS[name]):
        base = f"{url}/v1" if provider is OpenAIProvider else url
        client = close_after_test(provider(ProviderSettings(base_url=base, timeout_s=_deadline(name))))
        start = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            await client.generate(_request())
        assert time.monotonic() - start < _deadline(name) + 8.5
        if name == "trickle":
            assert caught.value.kind == "transient" and "time" in str(caught.value).lower()
        else:
            assert caught.value.kind == "permanent" and "longer than 2,000,000 bytes" in str(caught.value)


@pytest.mark.parametrize("name", ["trickle", "endless", "gzip-bomb"])
async def test_an_openai_endpoint_bot_that_trickles_never_ends_or_inflates_is_cut(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The openai_endpoint bot (a model server under test, read through the OpenAI SDK) has the same
    whole-answer deadline and byte cap: the cap sits in the SDK's HTTP client, below the SDK."""
    from simulator.bots.openai_endpoint import OpenAIEndpointFactory
    from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig

    _bomb()
    async for url in _serve(BEHAVIOURS[name]):
        config = OpenAIEndpointBotConfig(
            base_url=f"{url}/v1", model="m", timeout_s=_deadline(name), max_reply_bytes=1_000_000
        )
        factory = OpenAIEndpointFactory(config, Path("."))
        try:
            session = await factory.open("c#0")
            start = time.monotonic()
            with pytest.raises(BotError) as caught:
                await session.send("hello", 1)
            assert time.monotonic() - start < _deadline(name) + 8.5
        finally:
            await factory.aclose()
        said = str(caught.value)
        if name == "trickle":
            assert caught.value.kind == "timeout" and "deadline" in said
        elif name == "endless":
            assert caught.value.kind == "invalid_reply" and "longer than 1,000,000 bytes" in said, said
        else:  # compressed although asked not to be: refused before it is inflated
            assert caught.value.kind == "invalid_reply" and "came compressed (gzip)" in said, said


@pytest.mark.parametrize("name", ["trickle", "endless", "gzip-bomb"])
async def test_a_whatsapp_bots_state_url_that_trickles_or_never_ends_is_cut(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The WhatsApp adapter reads the bot's decision from `bot.state_url` through the same bounded read as a
    turn: within bot.timeout_s for the whole answer, and at most the byte cap."""
    from simulator.bots.whatsapp import WhatsAppBotFactory
    from simulator.config.bots.whatsapp import WhatsAppBotConfig
    from simulator.record.redact import forget_secrets
    from tests._whatsapp_bots import PlantedBot, serve, text

    for key, value in {
        "WHATSAPP_APP_SECRET": "app-secret-123",
        "WHATSAPP_ACCESS_TOKEN": "access-token-456",
        "WHATSAPP_VERIFY_TOKEN": "verify-token-789",
    }.items():
        monkeypatch.setenv(key, value)
    _bomb()
    bot = PlantedBot(lambda message, bot: [(0.0, text("Noted."))])
    stop = await serve(bot)
    try:
        async for url in _serve(BEHAVIOURS[name]):
            config = WhatsAppBotConfig(
                webhook_url=bot.url,
                verify=False,
                quiet_s=0.2,
                timeout_s=_deadline(name),
                max_reply_bytes=1_000_000,
                state_url=f"{url}/state/{{wa_id}}",
            )
            factory = WhatsAppBotFactory(config, tmp_path)
            bot.api_url = factory.graph.url
            await factory.start()
            try:
                session = await factory.open("run/state#0/1")
                await session.send("hello", 0)
                start = time.monotonic()
                with pytest.raises(BotError) as caught:
                    await session.final_state()
                assert time.monotonic() - start < _deadline(name) + 8.5
            finally:
                await factory.aclose()
            assert caught.value.kind == ("timeout" if name == "trickle" else "invalid_reply"), str(
                caught.value
            )
            assert "bot.state_url" in str(caught.value)
            assert ("deadline" if name == "trickle" else "longer than 1,000,000 bytes") in str(caught.value)
    finally:
        await stop()
        forget_secrets()
