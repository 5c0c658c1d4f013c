"""A gzip or deflate body is taken only whole (`simulator/inflate.py`): one cut before the end of its compressed
stream (in its header, in the middle, just before its trailer, missing only its CRC and size) or going on
after it was read as its decoded prefix, a shorter answer (or, with only its trailer missing, as a whole
one). Now it is an error on every path that decodes one: the provider pool and the SDK's (a network error,
retried and recorded, never parsed), a streamed answer, an SDK over another HTTP client, the bots' HTTP
channels, and the collector's OTLP receiver (a 400 with a plain message)."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai as openai_sdk
import pytest
from aiohttp import web

from simulator.bots.base import BotError
from simulator.bots.bounded_read import read_bounded, read_bounded_aiohttp
from simulator.bots.http_bot import HttpSession
from simulator.config.suite import ProviderSettings
from simulator.providers._httppool import NetworkError
from simulator.providers._sdkpost import SdkPost
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ModelResponse, ProviderError
from simulator.providers.openai import OpenAIProvider
from tests.collect_helpers import collector, receiver
from tests.conftest import close_after_test
from tests.support.raw_answer import RawAnswer, answer
from tests.support.raw_sse import anthropic_events, openai_events
from tests.support.servers import serving
from tests.support.two_paths import APIS, GOOD, both_paths, same_failure


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def _packed(wbits: int) -> Callable[[bytes], bytes]:
    def pack(data: bytes) -> bytes:
        packer = zlib.compressobj(wbits=wbits)
        return packer.compress(data) + packer.flush()

    return pack


# (Content-Encoding, how the body is packed, the size of its trailer: gzip's CRC and size, zlib's Adler-32)
CODINGS: dict[str, tuple[bytes, Callable[[bytes], bytes], int]] = {
    "gzip": (b"gzip", _packed(31), 8),
    "x-gzip": (b"x-gzip", _packed(31), 8),
    "deflate (zlib)": (b"deflate", _packed(15), 4),
    "deflate (raw)": (b"deflate", _packed(-15), 0),
}
# How the packed body is damaged, given the packed bytes and the trailer's size; (what the error says).
CUTS: dict[str, tuple[Callable[[bytes, int], bytes], str]] = {
    "cut in the header": (lambda data, _: data[:2], "ends before its compressed data does"),
    "cut in the middle": (lambda data, _: data[: len(data) // 2], "ends before its compressed data does"),
    "cut just before the trailer": (lambda data, t: data[: len(data) - t - 1], "ends before its compressed"),
    "only the trailer missing": (
        lambda data, t: data[: len(data) - t] if t else data[:-1],
        "ends before its",
    ),
    "one byte of the trailer missing": (lambda data, _: data[:-1], "ends before its compressed data does"),
    "garbage after the end": (
        lambda data, _: data + b"garbage",
        "goes on after the end of its compressed data",
    ),
    "a second stream after the end": (lambda data, _: data + data, "goes on after the end"),
}


def _damaged(coding: str, cut: str, text: bytes) -> tuple[bytes, bytes, str]:
    encoding, pack, trailer = CODINGS[coding]
    damage, says = CUTS[cut]
    packed = pack(text)
    body = damage(packed, trailer)
    assert body != packed
    return encoding, body, says


# --- the provider call, on the wire path and the SDK's: a network error, the same on both, never an answer


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("coding", CODINGS)
async def test_a_compressed_answer_not_whole_is_a_network_error_on_both_paths(coding: str, cut: str) -> None:
    encoding, body, says = _damaged(coding, cut, json.dumps(GOOD["openai"]).encode())
    raw = answer(b"200 OK", b"Content-Type: application/json", b"Content-Encoding: " + encoding, body=body)
    error = same_failure(await both_paths("openai", raw))
    assert (error.kind, error.status) == ("transient", None)  # retried and recorded as an error
    name = encoding.decode()
    assert f"could not be decoded (the answer's {name} body " in str(error), str(error)
    assert says in str(error), str(error)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [b"200 OK", b"503 Service Unavailable"])
async def test_an_answer_missing_only_its_gzip_trailer_is_no_answer(api: str, status: bytes) -> None:
    """Its JSON is whole: before, the answer was taken as it was."""
    body = gzip.compress(json.dumps(GOOD[api]).encode())[:-8]
    raw = answer(status, b"Content-Type: application/json", b"Content-Encoding: gzip", body=body)
    error = same_failure(await both_paths(api, raw))
    assert error.kind == "transient"
    assert str(error).endswith(
        f"could not be decoded (the answer's gzip body ends before its compressed data does (after "
        f"{len(body)} bytes): it was cut short)"
    ), str(error)


@pytest.mark.parametrize("coding", CODINGS)
async def test_whole_compressed_answers_are_still_read_on_both_paths(coding: str) -> None:
    encoding, pack, _ = CODINGS[coding]
    body = pack(json.dumps(GOOD["anthropic"]).encode())
    raw = answer(b"200 OK", b"Content-Type: application/json", b"Content-Encoding: " + encoding, body=body)
    for response in await both_paths("anthropic", raw):
        assert isinstance(response, ModelResponse) and response.text == "fine", response


# --- a streamed answer (read on the SDK's client): the same network error, not a stream without its end


STREAMED: dict[str, Callable[..., list[str]]] = {"openai": openai_events, "anthropic": anthropic_events}


def _stream_provider(api: str, url: str) -> Any:
    if api == "openai":
        return close_after_test(OpenAIProvider(ProviderSettings(base_url=url + "/v1")))
    return close_after_test(AnthropicProvider(ProviderSettings(base_url=url)))


# A Chat Completions stream is not read past `data: [DONE]` (as the SDK reads it): its end marker, the answer
# whole by then; a cut before it is the same error.
STREAM_CUTS = [
    ("anthropic", "cut in the middle"),
    ("anthropic", "cut just before the trailer"),
    ("anthropic", "garbage after the end"),
    ("openai", "cut in the header"),
    ("openai", "cut in the middle"),
]


@pytest.mark.parametrize(("api", "cut"), STREAM_CUTS)
async def test_a_streamed_answer_whose_gzip_is_not_whole_is_a_network_error(api: str, cut: str) -> None:
    """Before, a stream cut in its gzip was a permanent stream fault (never retried), and one with bytes
    after its end an answer."""
    events = "".join(STREAMED[api]()).encode()
    encoding, body, says = _damaged("gzip", cut, events)
    raw = answer(b"200 OK", b"Content-Type: text/event-stream", b"Content-Encoding: " + encoding, body=body)
    request = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")], stream=True)
    async with RawAnswer(raw) as server:
        with pytest.raises(ProviderError) as caught:
            await _stream_provider(api, server.url).generate(request)
    assert caught.value.kind == "transient", str(caught.value)
    assert "could not be decoded (the answer's gzip body" in str(caught.value) and says in str(caught.value)


@pytest.mark.parametrize("api", APIS)
async def test_a_whole_gzip_stream_is_read(api: str) -> None:
    events = "".join(STREAMED[api]()).encode()
    raw = answer(
        b"200 OK", b"Content-Type: text/event-stream", b"Content-Encoding: gzip", body=gzip.compress(events)
    )
    request = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")], stream=True)
    async with RawAnswer(raw) as server:
        response = await _stream_provider(api, server.url).generate(request)
    assert response.text == "Call 999 now: this may be a heart attack."


# --- an SDK given another HTTP client (its httpx default): its own `send`, read as the pool reads


async def _sdk_send(raw: bytes) -> Any:
    async with RawAnswer(raw) as server:
        client = openai_sdk.AsyncOpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0)
        post = SdkPost(openai_sdk, client, "/chat/completions")
        assert post._direct is None and post._fast
        try:
            return (await post({"model": "m", "messages": []}))[0]
        finally:
            await client.close()


@pytest.mark.parametrize("cut", ["cut in the middle", "only the trailer missing", "garbage after the end"])
async def test_another_http_clients_answer_not_whole_is_a_network_error(cut: str) -> None:
    encoding, body, says = _damaged("gzip", cut, json.dumps(GOOD["openai"]).encode())
    with pytest.raises(NetworkError) as caught:
        await _sdk_send(answer(b"200 OK", b"Content-Encoding: " + encoding, body=body))
    assert caught.value.kind == "DecodingError" and says in str(caught.value)


async def test_another_http_clients_whole_answers_and_errors_are_read() -> None:
    good = json.dumps(GOOD["openai"]).encode()
    assert (
        await _sdk_send(answer(b"200 OK", b"Content-Encoding: gzip", body=gzip.compress(good)))
        == GOOD["openai"]
    )
    error = json.dumps({"error": {"message": "warming up"}}).encode()
    with pytest.raises(openai_sdk.InternalServerError) as caught:
        await _sdk_send(
            answer(b"503 Service Unavailable", b"Content-Encoding: gzip", body=gzip.compress(error))
        )
    assert caught.value.status_code == 503 and "warming up" in str(caught.value)


# --- the bots' HTTP channels (httpx for http and voice, aiohttp for whatsapp's state_url): a bot error


@pytest.mark.parametrize("cut", ["cut in the middle", "only the trailer missing", "garbage after the end"])
@pytest.mark.parametrize("coding", ["gzip", "deflate (zlib)", "deflate (raw)"])
async def test_a_bots_compressed_answer_not_whole_is_a_bot_error(coding: str, cut: str) -> None:
    """An http bot's turn: before, a reply missing its trailer was taken whole, one cut in the middle as
    'not JSON'."""
    reply = json.dumps({"messages": ["Call 999 now."], "closed": True}).encode()
    encoding, body, says = _damaged(coding, cut, reply)
    raw = answer(b"200 OK", b"Content-Type: application/json", b"Content-Encoding: " + encoding, body=body)
    async with RawAnswer(raw) as server, httpx.AsyncClient() as client:
        session = HttpSession(client, f"{server.url}/chat", "c#0", timeout_s=10, max_bytes=1_000_000)
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
    assert caught.value.kind == "connection", str(caught.value)
    assert str(caught.value).startswith(f"the bot's {encoding.decode()} body ") and says in str(caught.value)


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
@pytest.mark.parametrize("cut", ["cut in the header", "only the trailer missing", "garbage after the end"])
async def test_a_bots_state_url_answer_not_whole_is_a_bot_error(client: str, cut: str) -> None:
    encoding, body, says = _damaged("gzip", cut, b'{"triage_level": "gp"}')
    raw = answer(b"200 OK", b"Content-Encoding: " + encoding, body=body)
    async with RawAnswer(raw) as server:
        with pytest.raises(BotError) as caught:
            await _state(client, server.url)
    assert caught.value.kind == "connection" and says in str(caught.value)
    assert str(caught.value).startswith("bot.state_url's gzip body ")


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
@pytest.mark.parametrize("coding", CODINGS)
async def test_a_bots_whole_compressed_answer_is_read(client: str, coding: str) -> None:
    encoding, pack, _ = CODINGS[coding]
    async with RawAnswer(answer(b"200 OK", b"Content-Encoding: " + encoding, body=pack(b"{}"))) as server:
        assert await _state(client, server.url) == (200, b"{}")


async def _state(client: str, url: str) -> tuple[int, bytes]:
    """A state read through the bounded read of the httpx or the aiohttp channel."""
    bounds: dict[str, Any] = {"timeout_s": 10, "max_bytes": 1_000_000, "who": "bot.state_url"}
    if client == "httpx":
        async with httpx.AsyncClient() as http:
            return await read_bounded(http, "POST", f"{url}/state", **bounds)
    async with aiohttp.ClientSession() as session:
        return await read_bounded_aiohttp(session, "POST", f"{url}/state", **bounds)


@pytest.mark.parametrize("client", ["httpx", "aiohttp"])
async def test_a_bot_is_asked_only_for_what_is_decoded_and_another_encoding_is_refused(client: str) -> None:
    asked: list[str] = []

    async def brotli(request: web.Request) -> web.Response:
        asked.append(request.headers.get("Accept-Encoding", ""))
        return web.Response(body=b"\x1b\x03\x00\xf8\xa5\x92\x8e\x15", headers={"Content-Encoding": "br"})

    async with serving("/state", brotli) as url:
        with pytest.raises(BotError) as caught:
            await _state(client, url.removesuffix("/state"))
    assert asked == ["gzip, deflate"]
    assert caught.value.kind == "invalid_reply"
    assert "in the br content encoding, which the request did not ask for" in str(caught.value)


# --- the collector's OTLP receiver: a 400 with a plain message


@pytest.mark.parametrize(
    "cut", ["cut in the header", "cut in the middle", "only the trailer missing", "garbage after the end"]
)
def test_the_collector_refuses_a_gzip_request_body_not_whole(tmp_path: Path, cut: str) -> None:
    document = json.dumps({"resourceSpans": []}).encode()
    _, body, says = _damaged("gzip", cut, document)
    c = collector(tmp_path / "live")
    with receiver(c) as url:
        response = httpx.post(
            f"{url}/v1/traces",
            content=body,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        whole = httpx.post(
            f"{url}/v1/traces",
            content=gzip.compress(document),
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert (
        response.text.startswith("the body is not valid gzip: the request's gzip body ")
        and says in response.text
    )
    assert whole.status_code == 200
