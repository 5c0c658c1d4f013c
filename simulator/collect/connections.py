"""How the receiver is served: uvicorn on httptools, with a deadline on reading each request.

uvicorn counts every open connection against `limit_concurrency` and answers 503 past it, and it times out
only an idle keep-alive connection, never one in the middle of its request: 600 sockets that sent
`POST /v1/traces HTTP/1.1\\r\\nHost: ...\\r\\n` and nothing more held the 512 connections for as long as they
stayed open, and `GET /status` was 503 all along (the token is only checked once the headers are read).
`ReadDeadline` gives a request `read_timeout` seconds from its connection (or its first byte, on a
keep-alive connection) until its headers and body are read; past it the connection is closed, answered
408 first when its headers were never complete (once they are, the app has the request and answers it, or
sees the client gone). Between requests uvicorn's keep-alive timeout applies, as before.

The cost a request is a clock reading and two attribute writes: one timer a connection is armed at a time,
and when it fires early (the request it was armed for is done) it re-arms for the one in progress, if any.
"""

from __future__ import annotations

__all__ = ["ReadDeadline", "server_config"]

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from simulator.collect.limits import MAX_CONNECTIONS, READ_TIMEOUT_S
from simulator.record.redact import redact
from simulator.visible import server_log_config

_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: 58\r\n\r\nthe request was not sent in time; the connection is closed"
)


class ReadDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request is not read within `read_timeout`."""

    read_timeout = READ_TIMEOUT_S
    _deadline: float | None = None  # when the request being read must be complete; None: none is
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # the first request's clock started with the connection
            self._arm()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._deadline = self.loop.time() + self.read_timeout
        if self._timer is None:
            self._timer = self.loop.call_at(self._deadline, self._expire)

    def _expire(self) -> None:
        self._timer = None
        if self._deadline is None or self.transport.is_closing():
            return
        if self.loop.time() < self._deadline:  # armed for an earlier request: now the current one's
            self._timer = self.loop.call_at(self._deadline, self._expire)
            return
        cycle = self.cycle
        if cycle is None or (cycle.response_complete and cycle.scope is not self.scope):
            self.transport.write(_TIMED_OUT)  # its headers were never read and nothing is answering: say why
        self.transport.close()


def server_config(
    app: Any,
    host: str,
    port: int,
    *,
    read_timeout: float = READ_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
) -> uvicorn.Config:
    """The receiver's uvicorn configuration: httptools (h11's pure-Python parsing was a third of the CPU of
    a one-span request) with the read deadline, no WebSocket library (no such route), the connection cap."""
    protocol = type("ReadDeadline", (ReadDeadline,), {"read_timeout": read_timeout})
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        ws="none",
        log_level="warning",
        log_config=server_log_config(clean=redact),  # its lines through visible.py, secrets redacted
        # No access lines (INFO, under the level above): without this uvicorn still formats each request's
        # client and path for a line it then drops.
        access_log=False,
        limit_concurrency=max_connections,
    )
