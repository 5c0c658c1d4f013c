"""One origin's keep-alive HTTP/1.1 connections on the event loop, spoken with h11: the wire path's POST.

The call that succeeds used to go out on an aiohttp session; importing aiohttp alone was a quarter of a
one-conversation run's CPU (its `connector` module builds two TLS contexts at import, even for plain HTTP).
h11 is the pure-Python HTTP/1.1 state machine under httpcore (httpx's transport): it frames the request,
parses the answer (content-length or chunked) and says whether the connection can carry another request.
What is ours is small: the pool, a protocol that hands bytes to h11, gzip/deflate decoding, and the names of
network errors (`NetworkError.kind`, httpx's error classes, which the caller maps to the SDK's HTTP client's).

The pool (per origin, as aiohttp's connector was for this one URL):
- at most `limit` requests in flight; a new connection is opened only when no idle one is left, so at most
  `limit` connections are open;
- an idle connection is closed `keepalive_s` after its last answer (the SDK's transport's keep-alive);
- the most recently used idle connection is reused first (the likeliest to be still open at the server).
"""

from __future__ import annotations

__all__ = ["H11Pool", "NetworkError"]

import asyncio
import select
import ssl
import sys
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import h11


def _headers_type() -> Any:
    """The type h11 gives a request's checked headers (a request given one is not checked again), or None
    in an h11 without it: then headers are checked on every request, as h11's public path does."""
    try:
        from h11 import _headers
    except ImportError:
        return None
    return getattr(_headers, "Headers", None)


_Headers: Any = _headers_type()

# An answer's bytes are decoded in pieces of at most this size, so a gzip bomb never inflates at once
# beyond it before the caller's byte cap sees it.
_PIECE = 1 << 20
# Reading is paused when this much arrived unread (the caller reads as it comes; this bounds a burst).
_HIGH_WATER = 1 << 20
_DEFAULT_PORTS = {"http": 80, "https": 443}


class NetworkError(Exception):
    """A call that failed on the network. `kind` names the error class httpx (httpcore, also over h11) raises
    for the same failure, `ConnectError`, `ReadError` or `RemoteProtocolError`; the cause is the original."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Connection(asyncio.Protocol):
    """One socket: what arrived, whether the server closed it, and its h11 state."""

    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: Any = None
        self.idle_since = 0.0
        self._arrived: deque[bytes] = deque()
        self._unread = 0
        self._paused = False
        self._eof = False
        self._lost: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._poller: Any = None  # made once per connection: `still_open` asks it before each reuse

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._arrived.append(data)
        self._unread += len(data)
        if self._unread > _HIGH_WATER and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # close our side too: the connection is never reused after the server's FIN

    def connection_lost(self, exc: BaseException | None) -> None:
        self._eof = True
        self._lost = exc
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def read(self) -> bytes:
        """The next bytes that arrived, or b"" once the server closed its side."""
        while not self._arrived:
            if self._lost is not None:
                raise NetworkError("ReadError", str(self._lost) or type(self._lost).__name__) from self._lost
            if self._eof:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = self._arrived.popleft()
        self._unread -= len(data)
        if self._paused and self._unread <= _HIGH_WATER // 2:
            self._paused = False
            self.transport.resume_reading()
        return data

    def still_open(self) -> bool:
        """Whether an idle connection can carry a request: nothing arrived since its last answer (no FIN, no
        reset, no stray bytes), seen by the event loop or, since its last turn, by the kernel."""
        if self._arrived or self._eof or self.transport.is_closing() or self.h11.trailing_data[0]:
            return False
        if self._poller is None:
            self._poller = _poller(self.transport)
        return not (self._poller and self._poller.poll(0))


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


class H11Pool:
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
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = [("Host", host), *headers.items()]
        # Checked and lower-cased once, not per request (h11 does both for each request it is given:
        # 45 us of a call's ~500 us of CPU); the one header that changes is added to a copy.
        self._checked = _checked_headers(self._headers)
        self._target_bytes = self._target.encode("ascii")
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
        state = connection.h11
        connection.transport.write(
            state.send(self._request(len(body)))
            + state.send(h11.Data(data=body))
            + state.send(h11.EndOfMessage())
        )  # the transport sends what the kernel does not take at once; no drain needed for one request
        try:
            response = await self._next(connection, first=True)
            while isinstance(response, h11.InformationalResponse):  # a 100 Continue and the like
                response = await self._next(connection, first=False)
            assert isinstance(response, h11.Response)
            raw_headers = response.headers.raw_items()
            chunks = self._body(connection, _encoding(raw_headers))
            content = b"".join([chunk async for chunk in self._capped(chunks)])
        except h11.RemoteProtocolError as exc:  # the server's bytes are not HTTP/1.1
            raise NetworkError("RemoteProtocolError", str(exc)) from exc
        return response.status_code, raw_headers, content

    def _request(self, length: int) -> h11.Request:
        if self._checked is None:  # an h11 without the checked-headers type: checked per request
            plain = [*self._headers, ("Content-Length", str(length))]
            return h11.Request(method="POST", target=self._target, headers=plain)
        size = str(length).encode("ascii")
        headers = _Headers([*self._checked, (b"Content-Length", b"content-length", size)])
        return h11.Request(method=b"POST", target=self._target_bytes, headers=headers, _parsed=True)

    @staticmethod
    async def _next(connection: _Connection, *, first: bool) -> Any:
        state = connection.h11
        while True:
            event = state.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await connection.read()
            if not data and first and not state.trailing_data[0]:  # not one byte of an answer
                raise NetworkError("RemoteProtocolError", "Server disconnected without sending a response.")
            state.receive_data(data)  # b"": the server closed; h11 says whether the answer was complete

    async def _body(self, connection: _Connection, encoding: str) -> AsyncIterator[bytes]:
        inflate = _Inflate(encoding)
        while True:
            event = await self._next(connection, first=False)
            if isinstance(event, h11.Data):
                for piece in inflate.feed(bytes(event.data)):
                    yield piece
            elif isinstance(event, h11.EndOfMessage):
                tail = inflate.flush()
                if tail:
                    yield tail
                return

    def _release(self, connection: _Connection) -> None:
        """Keep the connection for the next request if both sides may go on, else close it."""
        state = connection.h11
        if state.our_state is h11.DONE and state.their_state is h11.DONE and connection.still_open():
            state.start_next_cycle()
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


def _checked_headers(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes, bytes]] | None:
    """`headers` as h11 keeps them once it has checked them (raw name, lower-case name, value), or None when
    this h11 keeps them otherwise: its `Headers` type is not public, so the per-request path stays."""
    if _Headers is None:
        return None
    checked = h11.Request(method="POST", target="/", headers=headers).headers
    items = getattr(checked, "_full_items", None)
    return list(items) if isinstance(items, list) else None


def _encoding(raw_headers: Sequence[tuple[bytes, bytes]]) -> str:
    for name, value in raw_headers:
        if name.lower() == b"content-encoding":
            return value.decode("latin-1").strip().lower()
    return ""


class _Inflate:
    """An answer's gzip or deflate body decoded piece by piece (other encodings pass as they are, as aiohttp
    passed them; we ask for gzip and deflate only)."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding if encoding in ("gzip", "x-gzip", "deflate") else ""
        self._zlib: Any = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self._encoding:
            if data:
                yield data
            return
        if not data:
            return
        if self._zlib is None:
            if self._encoding == "deflate":
                # RFC 9110's deflate is zlib-wrapped; some servers send it raw (aiohttp reads both, so do we).
                wbits = zlib.MAX_WBITS if data[0] & 0x0F == 8 else -zlib.MAX_WBITS
            else:
                wbits = 16 + zlib.MAX_WBITS
            self._zlib = zlib.decompressobj(wbits)
        try:
            piece = self._zlib.decompress(data, _PIECE)
            while True:
                if piece:
                    yield piece
                if not self._zlib.unconsumed_tail:
                    return
                piece = self._zlib.decompress(self._zlib.unconsumed_tail, _PIECE)
        except zlib.error as exc:
            raise NetworkError(
                "DecodingError", f"the answer's {self._encoding} body is damaged: {exc}"
            ) from exc

    def flush(self) -> bytes:
        return self._zlib.flush() if self._zlib is not None else b""
