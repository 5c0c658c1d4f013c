"""uvicorn's own lines (a refused request, an application's traceback, a port already taken) in every server
the package runs (`simulator collect`'s receiver, `simulator serve`, the environment's MCP server) reach the
terminal through simulator/visible.py (`server_log_config`), not uvicorn's own handlers: plain text with the
command line's level word, no colour, control characters shown as escapes, and no registered secret or
well-known credential, whatever the request said. tests/test_terminal_output.py checks every uvicorn server
is given that configuration; here real servers are asked real requests."""

from __future__ import annotations

import asyncio
import base64
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from simulator.record.redact import forget_secrets, register_secrets
from tests.collect_helpers import collector, receiver

SECRET = "tok-very-secret-1"
SECRET_B64 = base64.b64encode(SECRET.encode()).decode()  # the secret in another encoding
API_KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2  # a well-known format, never registered


def _send_raw(url: str, data: bytes) -> bytes:
    """`data` sent as it is to the server at `url`; what it answered, up to the close."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _err(capsys: pytest.CaptureFixture[str], has: str) -> str:
    """Standard error once it holds `has` (the server logs from its own thread, as late as a busy machine
    makes it: the deadline is for a line that never comes)."""
    seen = ""
    deadline = time.monotonic() + 60
    while has not in seen and time.monotonic() < deadline:
        seen += capsys.readouterr().err
        time.sleep(0.01)
    return seen


@pytest.fixture(autouse=True)
def _secret() -> Iterator[None]:
    register_secrets([SECRET])
    yield
    forget_secrets()


def test_the_collect_receivers_refusal_of_a_broken_request_is_shown_through_visible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with receiver(collector(tmp_path / "out")) as url:
        answer = _send_raw(url, b"NOT HTTP \x1b]0;pwned\x07\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400")
    err = _err(capsys, "Invalid HTTP request received.")
    # The command line's level word and plain text: uvicorn's own handler would write "WARNING:  ...".
    assert "warning: Invalid HTTP request received." in err.splitlines(), err
    assert "WARNING:" not in err and "\x1b" not in err


async def _crashing_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An application that fails quoting the request's path and query, as a bug in one might."""
    if scope["type"] == "http":
        raise RuntimeError(f"cannot route {scope['path']}?{scope['query_string'].decode()}")


@contextmanager
def _served(app: Any) -> Iterator[str]:
    """`app` served with the collect receiver's uvicorn configuration, on a free loopback port."""
    import uvicorn

    from simulator.collect.connections import server_config

    server = uvicorn.Server(server_config(app, "127.0.0.1", 0))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(20)


@pytest.mark.parametrize(
    ("path", "query", "shown", "hidden"),
    [
        ("/a%1b]0;pwned%07/b", f"token={SECRET}", "/a\\x1b]0;pwned\\x07/b", SECRET),
        ("/%e2%80%aetxt", f"key={API_KEY}", "/\\u202etxt", API_KEY),
        ("/c%0dhidden", f"auth={SECRET_B64}", "/c\\x0dhidden", SECRET_B64),
    ],
    ids=["escape-and-secret", "bidi-and-api-key", "carriage-return-and-base64-secret"],
)
def test_an_applications_traceback_quoting_the_request_is_shown_safe_and_redacted(
    path: str, query: str, shown: str, hidden: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with _served(_crashing_app) as url:
        request = f"GET {path}?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        assert _send_raw(url, request).startswith(b"HTTP/1.1 500")
    err = _err(capsys, "RuntimeError: cannot route")
    assert "error: Exception in ASGI application" in err and "Traceback (most recent call last)" in err
    assert f"RuntimeError: cannot route {shown}?" in err, err
    assert hidden not in err and "\x1b" not in err and "\r" not in err and "\u202e" not in err


async def test_the_environments_mcp_server_logs_through_visible(capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.bots.env_mcp import EnvironmentMCPServer

    server = EnvironmentMCPServer()
    url = await server.start()
    try:
        answer = await asyncio.to_thread(_send_raw, url, b"\x1b[2J NOT HTTP\r\n\r\n")
    finally:
        await server.aclose()
    assert answer.startswith(b"HTTP/1.1 400")
    err = _err(capsys, "Invalid HTTP request received.")
    assert "warning: Invalid HTTP request received." in err.splitlines() and "WARNING:" not in err, err


def test_a_port_already_taken_is_said_in_the_command_lines_words(capsys: pytest.CaptureFixture[str]) -> None:
    """uvicorn's own start-up error (it then exits 1) reaches the terminal through visible too."""
    import uvicorn

    from simulator.collect.connections import server_config

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit):
            uvicorn.Server(server_config(_crashing_app, "127.0.0.1", port)).run()
    err = capsys.readouterr().err
    assert re.search(
        rf"^error: \[Errno \d+\] error while attempting to bind on address \('127\.0\.0\.1', {port}\)",
        err,
        re.M,
    ), err
