"""Idle and half-sent requests cannot lock the collector out: each request has a read deadline.

Before: 600 connections that sent `POST /v1/traces HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n` and nothing more held
uvicorn's 512 allowed connections, and `GET /status` answered 503 for as long as they stayed open (uvicorn
times out idle keep-alive connections only). The mechanism: the receiver's protocol (collect/connections.py
`ReadDeadline`) closes a connection whose request's headers and body are not read within the deadline.
Here the cap is lowered to 20 and the deadline to 1 s (3 s where the stalled connections must still hold the
cap when the test asks, however busy the machine); the sockets are real, the exporter is the SDK's.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.collect_helpers import collector, genai_turns, receiver, records, tracer, wait_for
from tests.support.waiting import LATE_S

CAP = 20

# What a client sent before it stopped: headers cut short, headers without their body, a body cut short,
# a keep-alive connection's second request cut short, nothing at all.
STALLED = {
    "half a header": b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n",
    "half a request line": b"POST /v1/tra",
    "headers, no body": b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n",
    "half a body": b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b'Content-Length: 100\r\n\r\n{"resourceSpans": [',
    "second request cut short": b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /status HTTP/1.1\r\nHo",
    "nothing": b"",
}


@contextmanager
def _stalled(url: str, sent: bytes, count: int) -> Iterator[list[socket.socket]]:
    port = int(url.rsplit(":", 1)[1])
    sockets = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=15)
            if sent:
                sock.sendall(sent)
            sockets.append(sock)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def _closed_by_the_server(sock: socket.socket) -> bytes:
    """Everything the server sent until it closed the connection (blocks until then, or the socket's timeout)."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


def _status(url: str) -> int:
    try:
        return httpx.get(f"{url}/status", timeout=10).status_code
    except httpx.TransportError:
        return 0


# What each stalled connection is sent before the server closes it.
TIMED_OUT = b"HTTP/1.1 408 Request Timeout"
HEARD = {
    "half a header": lambda got: got.startswith(TIMED_OUT),
    "half a request line": lambda got: got.startswith(TIMED_OUT),
    "nothing": lambda got: got.startswith(TIMED_OUT),
    # The headers were read: the app has the request (it sees the client gone), or past the cap uvicorn
    # answered 503; never a 408 besides.
    "headers, no body": lambda got: got == b"" or (got.startswith(b"HTTP/1.1 503") and TIMED_OUT not in got),
    "half a body": lambda got: got == b"" or (got.startswith(b"HTTP/1.1 503") and TIMED_OUT not in got),
    # The first request answered (past the cap: 503, and uvicorn closes), the second one cut: a 408.
    "second request cut short": lambda got: (
        (got.startswith(b"HTTP/1.1 200") and got.count(TIMED_OUT) == 1)
        or (got.startswith(b"HTTP/1.1 503") and TIMED_OUT not in got)
    ),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(STALLED))
def test_stalled_connections_are_closed_and_the_collector_serves_again(tmp_path: Path, name: str) -> None:
    out = tmp_path / "live"
    with (
        receiver(collector(out), read_timeout=1.0 + 2 * LATE_S, max_connections=CAP) as url,
        _stalled(url, STALLED[name], CAP + 10) as sockets,
    ):
        assert _status(url) == 503  # the cap is exhausted, for now (for 3 s, past a busy machine's lag)
        # Each stalled connection is closed by the server, told why when its headers were never read.
        for sock in sockets:
            got = _closed_by_the_server(sock)
            assert HEARD[name](got), got[:300]
        wait_for(lambda: _status(url) == 200)
        # A real exporter's request is taken, and its conversation written.
        provider = tracer(url)
        genai_turns(provider, "after-the-flood", [("chest pain", "call 999")])
        provider.shutdown()
        wait_for(lambda: len(records(out)) == 1)


@pytest.mark.timeout(120)
def test_a_keep_alive_client_sending_in_time_is_served_throughout(tmp_path: Path) -> None:
    """The deadline is per request: a keep-alive connection used for longer than it is not cut."""
    with receiver(collector(tmp_path / "live"), read_timeout=1.0) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
            for _ in range(5):
                sock.sendall(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                got = sock.recv(65536)
                assert got.startswith(b"HTTP/1.1 200"), got[:200]
                time.sleep(0.4)  # idle between requests, under uvicorn's keep-alive timeout (5 s)
