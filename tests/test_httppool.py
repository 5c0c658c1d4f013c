"""The wire path's own HTTP/1.1 pool (`providers/_httppool.py`) against real local servers: network errors
classified as on the SDK path, keep-alive reuse, a connection the server closed never reused, idle ones
closed, chunked and deflate answers, the framing rules llhttp leaves to its caller (a body to the close, an
informational head, a head too large with informational heads counted, in one read or many, stray bytes), a
header's characters (strict llhttp; a head it refuses read again leniently and checked), and the request's
bytes against h11's."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import h11
import pytest

from simulator.config.suite import ProviderSettings
from simulator.providers._httppool import HttpPool, NetworkError, _Connection
from simulator.providers._sdkpost import _capped
from simulator.providers._wire import WirePost
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.openai import OpenAIProvider
from tests.conftest import close_after_test

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
_ANSWER = {"choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}]}


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")


async def _serve(handler: Handler) -> AsyncIterator[int]:
    """A raw TCP server on a loopback port, running `handler` per connection."""
    tasks: set[asyncio.Task[None]] = set()

    async def each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await handler(reader, writer)
        except (asyncio.CancelledError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(each, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _request(reader: asyncio.StreamReader) -> bytes:
    """One request's head and body (Content-Length framed, as ours are)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return head + await reader.readexactly(length)


def _answer(body: bytes, *extra: bytes) -> bytes:
    lines = [b"HTTP/1.1 200 OK", b"Content-Type: application/json", *extra]
    if not any(e.lower().startswith(b"transfer-encoding") for e in extra):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def _reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _request(reader)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a RST
    writer.transport.abort()


async def _close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _request(reader)  # and close without a word


async def _garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _request(reader)
    writer.write(b"SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n")
    await writer.drain()


async def _stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _request(reader)
    await asyncio.sleep(60)


async def _truncated(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _request(reader)
    writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"choices":')
    await writer.drain()


def _provider(api: str, port: int, timeout_s: float = 5.0) -> Any:
    if api == "openai":
        return OpenAIProvider(ProviderSettings(base_url=f"http://127.0.0.1:{port}/v1", timeout_s=timeout_s))
    return AnthropicProvider(ProviderSettings(base_url=f"http://127.0.0.1:{port}", timeout_s=timeout_s))


REQUEST = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hi")])


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("handler", "said"),
    [
        (_reset, "broke before the whole answer came ([Errno 104] Connection reset by peer)"),
        (
            _close,
            "broke before the whole answer came (the server closed the connection without sending an answer)",
        ),
        (_garbage, "was not a whole HTTP/1.1 answer (illegal status line"),
        (
            _truncated,
            "broke before the whole answer came (the server closed the connection before the answer's end)",
        ),
        (_stall, "did not answer within 0.5 s (the provider's timeout_s)"),
    ],
)
async def test_a_network_failure_is_a_transient_error_said_as_it_is(
    api: str, handler: Handler, said: str
) -> None:
    async for port in _serve(handler):
        provider = close_after_test(_provider(api, port, timeout_s=0.5))
        assert isinstance(provider._post, WirePost)
        with pytest.raises(ProviderError) as caught:
            await provider.generate(REQUEST)
        assert caught.value.kind == "transient"
        assert said in str(caught.value)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_refused_connection_says_so(api: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    provider = close_after_test(_provider(api, port))
    with pytest.raises(ProviderError) as caught:
        await provider.generate(REQUEST)
    assert str(caught.value).startswith(f"connection refused by http://127.0.0.1:{port}")


def _pool(port: int, keepalive_s: float = 5.0) -> HttpPool:
    def no_tls() -> Any:
        raise AssertionError("plain HTTP builds no TLS context")

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    return HttpPool(url, {"accept": "application/json"}, limit=1000, keepalive_s=keepalive_s,
                   ssl_context=no_tls, capped=_capped)  # fmt: skip


async def _post_once(handler: Handler) -> tuple[int, bytes]:
    """One POST through a fresh pool to a server running `handler`: the status and the decoded body."""
    async for port in _serve(handler):
        pool = _pool(port)
        try:
            status, _, got = await pool.post(b"{}")
        finally:
            pool.close()
    return status, got


async def test_connections_are_kept_alive_and_one_the_server_closed_is_not_reused() -> None:
    connections: list[int] = []
    closed = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        for served in range(3):
            await _request(reader)
            writer.write(_answer(json.dumps(_ANSWER).encode()))
            await writer.drain()
            if len(connections) == 1 and served == 1:
                # The server's own idle timeout: it closes a kept-alive connection after two answers.
                writer.close()
                await writer.wait_closed()
                closed.set()
                return

    async for port in _serve(answer):
        pool = _pool(port)
        try:
            for _ in range(2):
                status, _, body = await pool.post(b"{}")
                assert (status, json.loads(body)) == (200, _ANSWER)
            assert len(connections) == 1  # the second call reused the first connection
            # The server's FIN has arrived (waited for, not timed): the next call must not meet it.
            await closed.wait()
            for _ in range(3):
                status, _, _ = await pool.post(b"{}")
                assert status == 200
            assert len(connections) == 2  # one fresh connection, then reused
        finally:
            pool.close()


async def test_idle_connections_are_closed_after_the_keepalive() -> None:
    closed = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(_answer(b"{}"))
        await writer.drain()
        assert await reader.read() == b""  # the client closed its idle connection
        closed.set()

    async for port in _serve(answer):
        pool = _pool(port, keepalive_s=0.2)
        try:
            assert (await pool.post(b"{}"))[0] == 200
            await asyncio.wait_for(closed.wait(), timeout=5)
        finally:
            pool.close()


@pytest.mark.parametrize("coding", ["chunked", "gzip", "deflate", "raw deflate"])
async def test_chunked_and_compressed_answers_are_decoded(coding: str) -> None:
    body = json.dumps({**_ANSWER, "padding": "x" * 50_000}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        if coding == "chunked":
            chunks = b"".join(
                b"%x\r\n%s\r\n" % (len(body[i : i + 7000]), body[i : i + 7000])
                for i in range(0, len(body), 7000)
            )
            writer.write(_answer(chunks + b"0\r\n\r\n", b"Transfer-Encoding: chunked"))
        else:
            wbits = {"gzip": 31, "deflate": 15, "raw deflate": -15}[coding]
            packer = zlib.compressobj(wbits=wbits)
            packed = packer.compress(body) + packer.flush()
            writer.write(_answer(packed, b"Content-Encoding: " + coding.split()[-1].encode()))
        await writer.drain()
        await reader.read()

    status, got = await _post_once(answer)
    assert (status, got) == (200, body)


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        (
            "http://127.0.0.1:{port}/v1/chat/completions",
            {"Authorization": "Bearer k", "X-Stainless-Lang": "python"},
        ),
        (
            "http://127.0.0.1:{port}/v1/messages?beta=true",
            {"x-api-key": "k", "anthropic-version": "2023-06-01"},
        ),
        ("http://127.0.0.1:{port}/p", {}),
    ],
)
async def test_the_request_is_the_bytes_h11_would_send(url: str, headers: dict[str, str]) -> None:
    """The pool writes its requests itself (its head made once); h11, which httpx frames requests with, must
    have put the very same bytes on the wire for each."""
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            seen.append(await _request(reader))
            writer.write(_answer(b"{}"))
            await writer.drain()

    bodies = (b'{"a": 1}', b"", b"x" * 1000)
    async for port in _serve(record):
        pool = HttpPool(
            url.format(port=port), headers, limit=1, keepalive_s=5, ssl_context=ssl.create_default_context,
            capped=_capped,
        )  # fmt: skip
        for body in bodies:
            assert (await pool.post(body))[0] == 200
        pool.close()
        host = f"127.0.0.1:{port}"
        for body, wire in zip(bodies, seen, strict=True):
            h11_client = h11.Connection(h11.CLIENT)
            target = url.format(port=port).split(host, 1)[1]
            request = h11.Request(
                method="POST", target=target,
                headers=[("Host", host), *headers.items(), ("Content-Length", str(len(body)))],
            )  # fmt: skip
            expected = h11_client.send(request) + h11_client.send(h11.Data(data=body))
            assert wire == expected + h11_client.send(h11.EndOfMessage())


@pytest.mark.parametrize("value", ["k\r\nX-Injected: 1", "k\nx", "a\x00b"])
def test_a_header_value_that_would_split_the_request_is_refused_when_the_pool_is_made(value: str) -> None:
    with pytest.raises(ValueError):
        HttpPool("http://127.0.0.1:1/p", {"Authorization": value}, limit=1, keepalive_s=5,
                 ssl_context=ssl.create_default_context, capped=_capped)  # fmt: skip


async def _answer_with(raw: bytes, *, close: bool = False) -> Handler:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(raw)
        await writer.drain()
        if close:
            writer.close()
            return
        await reader.read()

    return answer


@pytest.mark.parametrize(
    ("raw", "close", "body"),
    [
        (b"HTTP/1.1 100 Continue\r\n\r\n" + _answer(b'{"a": 1}'), False, b'{"a": 1}'),
        (
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + _answer(b"{}"),
            False,
            b"{}",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + b'{"to": "the close"}',
            True,
            b'{"to": "the close"}',
        ),
        (b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 70_000, True, b"x" * 70_000),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nX-Padded:   v  \r\n\r\nok", False, b"ok"),
    ],
    ids=[
        "100 continue",
        "two informational heads",
        "body to the close",
        "HTTP/1.0 to the close",
        "padded header",
    ],
)
async def test_answers_framed_by_the_rules_the_parser_leaves_to_us(
    raw: bytes, close: bool, body: bytes
) -> None:
    async for port in _serve(await _answer_with(raw, close=close)):
        pool = _pool(port)
        try:
            status, headers, got = await pool.post(b"{}")
        finally:
            pool.close()
    assert (status, got) == (200, body)
    assert all(value == value.strip() for _, value in headers)


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"HTTP/1.1 200 OK\r\n" + b"X-Long: " + b"a" * 70_000 + b"\r\n\r\n{}", "head is over 64 KiB"),
        (
            b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 20_000 + b"Content-Length: 2\r\n\r\n{}",
            "head is over 64 KiB",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "not HTTP/1.1"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not HTTP/1.1"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            "closed the connection before the answer's end",
        ),
        (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            "switched protocols",
        ),
        (b"ICY 200 OK\r\n\r\n", "illegal status line"),
    ],
    ids=[
        "one endless header",
        "endless headers",
        "two lengths",
        "bad chunk size",
        "cut chunk",
        "upgrade",
        "not http",
    ],
)
async def test_a_malformed_answer_is_a_protocol_error_said_as_it_is(raw: bytes, said: str) -> None:
    async for port in _serve(await _answer_with(raw, close=True)):
        pool = _pool(port)
        try:
            with pytest.raises(NetworkError) as caught:
                await asyncio.wait_for(pool.post(b"{}"), timeout=10)
        finally:
            pool.close()
    assert caught.value.kind in ("RemoteProtocolError", "ReadError")
    assert said in str(caught.value)


class _Transport:
    """What a connection asks of its transport while an answer arrives in one piece."""

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


# Informational heads by the thousand before the answer's own (a server or proxy gone wrong): over 64 KiB in
# all, the head is too large, whether they arrive in one read or several.
FLOODS = {
    "bare 100 Continue": b"HTTP/1.1 100 Continue\r\n\r\n" * 2700,
    "100 without a reason": b"HTTP/1.1 100\r\n\r\n" * 4700,
    "103 Early Hints with a link": b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" * 1200,
    "102, 100 and 103 in turn": (
        b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n" * 900
    ),
}


@pytest.mark.parametrize("flood", FLOODS.values(), ids=FLOODS.keys())
def test_informational_heads_over_64_kib_in_one_read_are_a_head_too_large(flood: bytes) -> None:
    assert len(flood) > 64 * 1024
    connection = _Connection()
    connection.connection_made(_Transport())
    connection.begin()
    connection.data_received(flood + _answer(b"{}"))  # one read: what one recv() of 256 KiB can carry
    with pytest.raises(NetworkError) as caught:
        asyncio.run(connection.head())
    assert caught.value.kind == "RemoteProtocolError"
    assert "head is over 64 KiB" in str(caught.value)


@pytest.mark.parametrize("pieces", [1, 7, 300])
def test_informational_heads_under_64_kib_are_read_past_in_one_read_or_many(pieces: int) -> None:
    flood = b"HTTP/1.1 100 Continue\r\n\r\n" * 2400 + _answer(b'{"a": 1}')  # 60,000 bytes of 1xx heads
    connection = _fed(flood, pieces)
    asyncio.run(connection.head())
    assert connection.status == 200 and b"".join(connection._pieces) == b'{"a": 1}'


def _fed(raw: bytes, pieces: int, connection: _Connection | None = None) -> _Connection:
    """A connection that was given `raw` as the answer to a request, in `pieces` reads."""
    if connection is None:
        connection = _Connection()
        connection.connection_made(_Transport())
    connection.begin()
    size = -(-len(raw) // pieces)
    for start in range(0, len(raw), size):
        connection.data_received(raw[start : start + size])
    return connection


@pytest.mark.parametrize("pieces", [1, 3, 60])
@pytest.mark.parametrize(
    ("header", "fault"),
    [
        (b"X-Fold: first\r\n second", None),
        (b"X-Fold: first\r\n\tsecond", None),
        (b"X-Note: a\x00b", "0x00"),
        (b"X-Note: \x1b[0m", "0x1b"),
        (b"X-Fold: first\r\n sec\x7fond", "0x7f"),
    ],
    ids=["folded", "folded with a tab", "NUL", "escape", "DEL in a folded line"],
)
def test_a_head_strict_llhttp_refuses_is_read_again_leniently_in_one_read_or_many(
    header: bytes, fault: str | None, pieces: int
) -> None:
    connection = _fed(b"HTTP/1.1 100 Continue\r\n\r\n" + _answer(b'{"a": 1}', header), pieces)
    if fault is None:
        asyncio.run(connection.head())
        assert connection.status == 200 and b"".join(connection._pieces) == b'{"a": 1}'
        assert (b"X-Fold", b"first second") in connection.headers or (
            b"X-Fold",
            b"first\tsecond",
        ) in connection.headers
        return
    with pytest.raises(NetworkError) as caught:
        asyncio.run(connection.head())
    assert str(caught.value) == (
        f"a header's value holds the control character {fault}, which HTTP does not allow in a header"
    )


def test_a_connection_read_leniently_once_still_refuses_a_nul_in_a_later_answer() -> None:
    connection = _fed(_answer(b"{}", b"X-Fold: a\r\n b"), 1)
    asyncio.run(connection.head())
    assert connection.reusable()
    connection._pieces.clear()
    connection.end()
    _fed(_answer(b"{}", b"X-Note: a\x00b"), 1, connection)
    with pytest.raises(NetworkError, match="control character 0x00"):
        asyncio.run(connection.head())


@pytest.mark.parametrize("flood", FLOODS.values(), ids=FLOODS.keys())
async def test_a_server_sending_informational_heads_over_64_kib_is_refused(flood: bytes) -> None:
    async for port in _serve(await _answer_with(flood + _answer(b"{}"), close=True)):
        pool = _pool(port)
        try:
            with pytest.raises(NetworkError) as caught:
                await asyncio.wait_for(pool.post(b"{}"), timeout=10)
        finally:
            pool.close()
    assert "head is over 64 KiB" in str(caught.value)


@pytest.mark.parametrize(
    "extra",
    [b"Connection: close", b"HTTP/1.0"],
    ids=["connection close", "HTTP/1.0"],
)
async def test_an_answer_that_ends_the_connection_is_never_reused(extra: bytes) -> None:
    connections: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        while True:
            await _request(reader)
            raw = (
                _answer(b"{}", extra)
                if extra != b"HTTP/1.0"
                else _answer(b"{}").replace(b"HTTP/1.1", b"HTTP/1.0", 1)
            )
            writer.write(raw)
            await writer.drain()

    async for port in _serve(answer):
        pool = _pool(port)
        try:
            for _ in range(3):
                assert (await pool.post(b"{}"))[0] == 200
        finally:
            pool.close()
    assert len(connections) == 3


async def test_stray_bytes_after_an_answer_keep_its_connection_from_the_next_request() -> None:
    connections: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        while True:
            await _request(reader)
            writer.write(_answer(b"{}") + _answer(b'{"unasked": true}'))  # a second answer nobody asked for
            await writer.drain()

    async for port in _serve(answer):
        pool = _pool(port)
        try:
            for _ in range(3):
                status, _, body = await pool.post(b"{}")
                assert (status, body) == (200, b"{}")
                await asyncio.sleep(0.05)
        finally:
            pool.close()
    assert len(connections) == 3


async def test_a_large_answer_arrives_whole_through_the_paused_reads() -> None:
    body = bytes(range(256)) * (5 * 4096)  # 5 MiB: reading pauses at 1 MiB unread and resumes

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(_answer(body))
        await writer.drain()
        await reader.read()

    status, got = await _post_once(answer)
    assert (status, len(got), got == body) == (200, len(body), True)
