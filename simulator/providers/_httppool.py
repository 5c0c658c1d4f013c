"""One origin's keep-alive HTTP/1.1 connections on the event loop: the wire path's POST.

The call that succeeds used to go out on an aiohttp session; importing aiohttp alone was a quarter of a
one-conversation run's CPU (its `connector` module builds two TLS contexts at import, even for plain HTTP).
Then it went out framed by h11, the pure-Python state machine under httpx, whose parsing of each answer was
a fifth of a run's CPU. The answer is now parsed by httptools: llhttp, the C parser of Node.js, which uvicorn
uses for the same work on the server side. What is ours is small: the pool, the request's bytes (its fixed
headers checked once, by h11's own rules, when the pool is made), a protocol that feeds each arrival to the
parser, the rules llhttp leaves to its caller (a body that ends where the connection does, the size of a
head, informational heads included, the characters RFC 9110 allows in a header's value and RFC 9112 in a
reason phrase), gzip/deflate decoding (`decoded`, which the SDK path shares; a body taken only whole:
`simulator.inflate`), and the names of network errors
(`NetworkError.kind`, named as httpx's error classes are, which `_http.network_message` puts in words).

The pool (per origin, as aiohttp's connector was for this one URL):
- at most `limit` requests in flight; a new connection is opened only when no idle one is left, so at most
  `limit` connections are open;
- an idle connection is closed `keepalive_s` after its last answer (the SDK's transport's keep-alive);
- the most recently used idle connection is reused first (the likeliest to be still open at the server).
"""

from __future__ import annotations

__all__ = ["HttpPool", "NetworkError", "decoded", "header_fault", "reason_fault"]

import asyncio
import select
import ssl
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any
from urllib.parse import urlsplit

import httptools

from simulator.inflate import DamagedBody, Inflate

# Reading is paused when this much arrived unread (the caller reads as it comes; this bounds a burst).
_HIGH_WATER = 1 << 20
# The most an answer's status line and headers may take (h11's limit was 16 KiB; servers allow 8 to 64).
_MAX_HEAD = 64 * 1024
# A head's bytes that reach no callback: `HTTP/1.1 200 ` and the line ends of the status line and the head.
_HEAD_FRAME = len(b"HTTP/1.1 200 \r\n\r\n")
# What RFC 9110 (5.5) allows in a header's value, and RFC 9112 (4) in a status line's reason phrase: the
# tab, visible ASCII, space and obs-text (0x80-0xff); not the other control characters (NUL among them;
# lenient llhttp, as aiohttp's, lets them through). A line break never reaches a value: a folded line's
# comes joined by spaces. Deleting these bytes leaves the others: one C pass over the values (a regular
# expression's search costs four times more).
_ALLOWED = bytes([0x09, *range(0x20, 0x7F), *range(0x80, 0x100)])
_VALUE = itemgetter(1)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Stop(Exception):
    """Raised in a parser callback to stop the parsing of what arrived (httptools raises it on as an
    `HttpParserCallbackError`, which `data_received` knows by the state the callback left)."""


class NetworkError(Exception):
    """A call that failed on the network. `kind` names the SDK's HTTP client's error class for it: a
    `ConnectError`, a `ReadError` (the connection broke or the server closed it before the answer's end,
    as aiohttp's transport on the SDK path reads it), a `RemoteProtocolError` (an answer that is not
    HTTP/1.1) or a `DecodingError`; the cause is the original."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Connection(asyncio.Protocol):
    """One socket, its parser, and the answer it is reading: what arrived is parsed as it arrives (llhttp's
    callbacks below fill the answer in), and the caller waits for the head, then for the body's pieces."""

    def __init__(self) -> None:
        self.transport: Any = None
        self.idle_since = 0.0
        self._parser = _parser(self, lenient_headers=False)
        # Whether this connection's parser is lenient about header values (after a head strict llhttp refused:
        # `_relax`); `header_fault` then checks them in Python.
        self._lenient = False
        self._poller: Any = None  # made once per connection: `still_open` asks it before each reuse
        self._waiter: asyncio.Future[None] | None = None
        self._reading = False  # an exchange is under way: bytes outside one are stray
        self._stray = False  # bytes (or an answer) arrived that no request asked for: never reused
        self._eof = False
        self._lost: BaseException | None = None
        self._start_answer()

    def _start_answer(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.keep_alive = False
        self._head_bytes = 0  # as arrived before the head was done (a header never ended is in no callback)
        # As the parser gave them, the informational heads' too: a head that came whole with its body, or
        # after a thousand 1xx heads in one read, is counted where `_head_bytes` sees the read whole.
        self._header_bytes = 0
        self._status_line = False
        self._head_done = False
        self._complete = False
        self._any_byte = False
        # The reads of a head that spans several (to read it again, `_relax`); the usual head comes in one.
        self._head_chunks: tuple[bytes, ...] = ()
        self._pieces: deque[bytes] = deque()
        self._unread = 0
        self._paused = False
        self._failed: NetworkError | None = None

    # -- the transport's side
    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if not self._reading or self._complete:
            self._stray = True  # a second answer, or bytes while idle: the next request must not meet them
            return
        self._any_byte = True
        if not self._head_done:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._refused(exc, data)
        if not self._head_done and not self._lenient and self._failed is None:
            self._head_chunks += (data,)
        if not self._head_done and self._head_bytes > _MAX_HEAD and self._failed is None:
            self._fail("RemoteProtocolError", f"the answer's head is over {_MAX_HEAD // 1024} KiB")
        if self._unread > _HIGH_WATER and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def _refused(self, exc: Exception, data: bytes) -> None:
        """llhttp stopped on `data`: the server switched protocols, a callback of ours stopped it, strict
        llhttp refused a head (read again leniently: `_relax`), or the answer is no HTTP/1.1."""
        if isinstance(exc, httptools.HttpParserUpgrade):
            self._fail("RemoteProtocolError", "the server switched protocols, which no request asked for")
        elif self._failed is not None or self._stray:  # a stop of ours (a callback raising `_Stop`)
            return
        elif not self._head_done and not self._lenient:
            self._relax(b"".join((*self._head_chunks, data)))
        else:
            first = "illegal status line" if not self._status_line else "the answer is not HTTP/1.1"
            self._fail("RemoteProtocolError", f"{first}: {exc}")

    def _relax(self, head: bytes) -> None:
        """Read a head strict llhttp refused again, as aiohttp's lenient llhttp reads it (a folded line, any
        character in a value), with RFC 9110's rule for a value's characters checked here (`header_fault`).
        Strict llhttp checks every value in C as it parses, so an answer that is right pays nothing for it."""
        self._lenient = True
        self._parser = _parser(self, lenient_headers=True)
        self._head_chunks = ()
        self.status, self.headers, self._header_bytes, self._status_line = 0, [], 0, False
        try:
            self._parser.feed_data(head)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._refused(exc, head)

    def eof_received(self) -> bool:
        self._eof = True
        self._end_of_stream()
        return False  # close our side too: the connection is never reused after the server's FIN

    def connection_lost(self, exc: BaseException | None) -> None:
        self._eof = True
        self._lost = exc
        self._end_of_stream()

    def _end_of_stream(self) -> None:
        """The server closed: an answer whose body runs to the close is complete, any other is cut off."""
        if self._reading and not self._complete and self._failed is None:
            if self._lost is not None:
                self._fail("ReadError", str(self._lost) or type(self._lost).__name__)
            elif not self._any_byte:
                self._fail("ReadError", "the server closed the connection without sending an answer")
            elif self._head_done and self._until_close():
                self._complete = True
            else:
                self._fail("ReadError", "the server closed the connection before the answer's end")
        self._wake()

    def _until_close(self) -> bool:
        """Whether the answer's body is delimited by the connection's close (no length, not chunked)."""
        for name, value in self.headers:
            lower = name.lower()
            if lower == b"content-length" or (lower == b"transfer-encoding" and b"chunked" in value.lower()):
                return False
        return self.status not in (204, 304)

    # -- llhttp's callbacks (C calls them during `feed_data`; raising `_Stop` stops the parsing)
    def on_message_begin(self) -> None:
        if self._complete:  # a second answer in the same arrival: nobody asked for it
            self._stray = True
            raise _Stop

    def on_status(self, status: bytes) -> None:
        self._status_line = True
        self._header_bytes += len(status)  # the reason phrase (the rest of the line: `_HEAD_FRAME`)
        fault = reason_fault(status)  # llhttp lets any byte but CR and LF through, strict or not
        if fault is not None:
            self._fail("RemoteProtocolError", fault)
            raise _Stop

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4
        if self._header_bytes > _MAX_HEAD:
            self._too_long()
        self.headers.append((name, value.strip(b" \t")))

    def on_headers_complete(self) -> None:
        self._header_bytes += _HEAD_FRAME
        if self._header_bytes > _MAX_HEAD:  # informational heads by the thousand, in one read or several
            self._too_long()
        self.status = self._parser.get_status_code()
        if 100 <= self.status < 200:  # a 100 Continue and the like: the answer's head comes after it
            self.headers = []
            return
        if self._lenient:
            fault = header_fault(self.headers)
            if fault is not None:
                self._fail("RemoteProtocolError", fault)
                raise _Stop
        self._head_done = True

    def _too_long(self) -> None:
        self._fail("RemoteProtocolError", f"the answer's head is over {_MAX_HEAD // 1024} KiB")
        raise _Stop

    def on_body(self, body: bytes) -> None:
        self._pieces.append(body)
        self._unread += len(body)

    def on_message_complete(self) -> None:
        if not self._head_done:  # the end of an informational head
            self.status = 0
            return
        self.keep_alive = self._parser.should_keep_alive()
        self._complete = True

    # -- the caller's side
    def begin(self) -> None:
        """Ready for the answer to the request about to be written."""
        self._start_answer()
        self._reading = True

    def end(self) -> None:
        self._reading = False

    def _fail(self, kind: str, message: str) -> None:
        self._failed = NetworkError(kind, message)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def head(self) -> None:
        """Wait for the answer's status and headers."""
        while True:
            if self._failed is not None:
                raise self._failed
            if self._head_done:
                return
            await self._wait()

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body's pieces as they arrive, to its end."""
        while True:
            while self._pieces:
                piece = self._pieces.popleft()
                self._unread -= len(piece)
                if self._paused and self._unread <= _HIGH_WATER // 2:
                    self._paused = False
                    self.transport.resume_reading()
                yield piece
            if self._failed is not None:
                raise self._failed
            if self._complete:
                return
            await self._wait()

    def reusable(self) -> bool:
        """Whether the connection may go back to the pool: the answer whole, both sides willing, nothing seen
        since. (The kernel is asked only when it is taken again, `still_open`: once a call, not twice.)"""
        return self._complete and self.keep_alive and self._seen_open()

    def _seen_open(self) -> bool:
        return not (self._stray or self._eof or self.transport.is_closing())

    def still_open(self) -> bool:
        """Whether an idle connection can carry a request: nothing arrived since its last answer (no FIN, no
        reset, no stray bytes), seen by the event loop or, since its last turn, by the kernel."""
        if not self._seen_open():
            return False
        if self._poller is None:
            self._poller = _poller(self.transport)
        return not (self._poller and self._poller.poll(0))


def _parser(protocol: _Connection, *, lenient_headers: bool) -> httptools.HttpResponseParser:
    """llhttp for one connection, reading what aiohttp's parser (the SDK path's, llhttp too) reads in an
    answer: lines ending in LF alone, spaces after a chunk's size, and (`lenient_headers`) a folded header
    line and any character in a header's value (strict llhttp refuses the characters RFC 9110 does)."""
    parser = httptools.HttpResponseParser(protocol)
    parser.set_dangerous_leniencies(
        lenient_headers=lenient_headers,
        lenient_optional_cr_before_lf=True,
        lenient_spaces_after_chunk_size=True,
    )
    return parser


def _poller(transport: Any) -> Any:
    """A `poll` on this socket for something the kernel holds for it (a FIN, a reset, bytes), asked without
    a read; False where there is none to ask (Windows has no poll(): the event loop's view is all there is)."""
    if sys.platform == "win32":
        return False
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN | select.POLLPRI)
    return poller


class HttpPool:
    """`await pool.post(body)` -> (status, raw headers, decoded body) of one POST to `url`."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        limit: int,
        keepalive_s: float,
        ssl_context: Callable[[], ssl.SSLContext],
        capped: Callable[[AsyncIterator[bytes]], AsyncIterator[bytes]],
    ) -> None:
        parts = urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or _DEFAULT_PORTS[parts.scheme]
        host = f"[{self._host}]" if ":" in self._host else self._host
        if parts.port is not None and parts.port != _DEFAULT_PORTS[parts.scheme]:
            host += f":{parts.port}"  # as aiohttp and httpx write it: the port only when not the default
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # The request's head but its length, made once: each request adds its Content-Length and body.
        self._head = request_head(target, [("Host", host), *headers.items()])
        self._ssl_context = ssl_context
        self._ssl: ssl.SSLContext | None = None
        self._capped = capped  # the caller's byte cap, on the decoded answer
        self._limit = limit
        self._keepalive_s = keepalive_s
        self._slots: asyncio.Semaphore | None = None
        self._idle: deque[_Connection] = deque()  # oldest on the left
        self._busy: set[_Connection] = set()
        self._expiry: asyncio.TimerHandle | None = None

    async def post(self, body: bytes) -> tuple[int, Sequence[tuple[bytes, bytes]], bytes]:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._limit)
        async with self._slots:
            connection = self._reuse() or await self._connect()
            self._busy.add(connection)
            try:
                answer = await self._exchange(connection, body)
            except BaseException:  # a cancelled or failed exchange leaves the connection mid-message
                self._busy.discard(connection)
                connection.transport.abort()
                raise
            self._busy.discard(connection)
            self._release(connection)
            return answer

    def _reuse(self) -> _Connection | None:
        """The newest idle connection still open, closing those found closed or expired.

        Why no retry: a request on a kept-alive connection can meet the server closing it (its own idle
        timeout). Such a connection is recognised here before it carries anything (the server's FIN or reset
        has arrived: `still_open`). Once a byte of the request went to the kernel, the server may have read
        the request and acted on it (a completion billed, a tool run); this POST is not idempotent, so
        a failure after that is not retried here on a fresh connection: it is a transient error, and the
        engine's retry policy (counted, paced, recorded) decides, as for any other network error.
        """
        deadline = time.monotonic() - self._keepalive_s
        while self._idle:
            connection = self._idle.pop()
            if connection.idle_since >= deadline and connection.still_open():
                return connection
            connection.transport.close()
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self._https and self._ssl is None:
            self._ssl = self._ssl_context()  # built once, and only for https
        try:
            _, connection = await loop.create_connection(
                _Connection, self._host, self._port,
                ssl=self._ssl if self._https else None, server_hostname=self._host if self._https else None,
            )  # fmt: skip
        except OSError as exc:  # refused, unreachable, unknown host, a certificate refused (ssl.SSLError)
            raise NetworkError("ConnectError", str(exc) or type(exc).__name__) from exc
        return connection

    async def _exchange(
        self, connection: _Connection, body: bytes
    ) -> tuple[int, Sequence[tuple[bytes, bytes]], bytes]:
        connection.begin()
        # The transport sends what the kernel does not take at once; no drain needed for one request.
        connection.transport.write(b"%sContent-Length: %d\r\n\r\n%s" % (self._head, len(body), body))
        await connection.head()
        headers = connection.headers
        content = b"".join([chunk async for chunk in self._capped(decoded(connection.pieces(), headers))])
        connection.end()
        return connection.status, headers, content

    def _release(self, connection: _Connection) -> None:
        """Keep the connection for the next request if both sides may go on, else close it."""
        if connection.reusable():
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
            if self._expiry is None:
                self._expiry = asyncio.get_running_loop().call_later(self._keepalive_s, self._expire)
        else:
            connection.transport.close()

    def _expire(self) -> None:
        """Close the connections idle for `keepalive_s`; come back for the next one to expire."""
        self._expiry = None
        now = time.monotonic()
        while self._idle and now - self._idle[0].idle_since >= self._keepalive_s:
            self._idle.popleft().transport.close()
        if self._idle:
            wait = self._idle[0].idle_since + self._keepalive_s - now
            self._expiry = asyncio.get_running_loop().call_later(wait, self._expire)

    def close(self) -> None:
        """Close every connection, idle or in use."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        while self._idle:
            self._idle.pop().transport.close()
        for connection in self._busy:
            connection.transport.abort()
        self._busy.clear()


def request_head(target: str, headers: list[tuple[str, str]]) -> bytes:
    """A POST's request line and `headers`, as h11 writes them, each checked by h11's own rules (a name that
    is no token, a value holding a line break: ValueError), once for every request the pool sends."""
    import h11  # its checks only, once per pool: the bytes are ours

    try:
        request = h11.Request(method="POST", target=target, headers=headers)
    except h11.LocalProtocolError as exc:  # the suite's headers are checked where they are read: a guard
        raise ValueError(f"a request the provider pool would send is not HTTP/1.1: {exc}") from None
    lines = [b"POST %s HTTP/1.1\r\n" % request.target]
    lines += [b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw_items()]
    return b"".join(lines)


def reason_fault(reason: bytes) -> str | None:
    """What makes a status line's reason phrase no HTTP (RFC 9112 4: the tab, space, visible ASCII and obs-text
    only; a control character, NUL or an escape sequence among them), in words, or None. Both paths ask it of
    every answer, informational ones too: such a head is malformed, never shown."""
    refused = reason.translate(None, _ALLOWED)
    if not refused:
        return None
    return (
        f"the status line's reason phrase holds the control character 0x{refused[0]:02x}, which HTTP does "
        "not allow there"
    )


def header_fault(raw_headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """What makes an answer's headers no HTTP (a control character in a value, NUL among them), in words,
    or None: one pass over the values joined by a tab, not a loop per header. The pool asks it only of a
    head strict llhttp refused (`_Connection._relax`); the SDK path, of every answer."""
    refused = b"\t".join(map(_VALUE, raw_headers)).translate(None, _ALLOWED)
    if not refused:
        return None
    return f"a header's value holds the control character 0x{refused[0]:02x}, which HTTP does not allow in a header"


async def decoded(
    pieces: AsyncIterator[bytes], raw_headers: Sequence[tuple[bytes, bytes]]
) -> AsyncIterator[bytes]:
    """An answer's body pieces decoded by its Content-Encoding (gzip, deflate; any other passes as it is,
    for the caller to refuse: `_answer.unasked_encoding`). A body that is not one whole compressed stream
    (damaged, cut before its end, going on after it: `simulator.inflate`) is a network error, never a
    shorter answer."""
    inflate = Inflate(_encoding(raw_headers), "the answer")
    try:
        async for data in pieces:
            for piece in inflate.feed(data):
                yield piece
        tail = inflate.end()
    except DamagedBody as exc:
        raise NetworkError("DecodingError", str(exc)) from exc
    if tail:
        yield tail


def _encoding(raw_headers: Sequence[tuple[bytes, bytes]]) -> str:
    for name, value in raw_headers:
        if name.lower() == b"content-encoding":
            return value.decode("latin-1")
    return ""
