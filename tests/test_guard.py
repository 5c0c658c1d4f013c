"""The session's guard (tests/guard.py): a connection off this machine and a real API key fail the test
that tried, loopback keeps working, and the engine's uvloop loop is guarded too."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from simulator.eventloop import loop_name, run_async
from tests import guard

OFF_MACHINE = ["192.0.2.1", "8.8.8.8", "2001:db8::1"]  # TEST-NET, a public resolver, IPv6 documentation


@pytest.fixture
def loopback_server() -> Iterator[str]:
    """A plain HTTP server on 127.0.0.1 that answers 200 to every GET."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _take_violations() -> list[str]:
    """What the guard recorded (cleared, so this test's deliberate trips do not fail it)."""
    found = list(guard.VIOLATIONS)
    guard.VIOLATIONS.clear()
    return found


@pytest.mark.parametrize("host", OFF_MACHINE)
def test_a_connection_off_the_machine_is_refused_and_recorded(host: str) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(guard.NetworkGuardError):
        sock.connect((host, 443))
    with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(guard.NetworkGuardError):
        sock.connect_ex((host, 443))
    found = _take_violations()
    assert len(found) == 2 and all(host in v and "loopback only" in v for v in found)


@pytest.mark.parametrize("name", ["example.com", "api.openai.com", "api.anthropic.com"])
def test_resolving_a_name_off_the_machine_is_refused(name: str) -> None:
    with pytest.raises(guard.NetworkGuardError):
        socket.getaddrinfo(name, 443)
    with pytest.raises(httpx.ConnectError, match="loopback only"):  # the client wraps the refusal
        httpx.get(f"https://{name}/v1/models", timeout=2)
    assert all(name in v for v in _take_violations())


def test_the_engines_uvloop_loop_is_guarded_and_still_uvloop() -> None:
    async def reach(host: str) -> None:
        await asyncio.open_connection(host, 443)

    if os.name != "nt":
        assert loop_name() == "uvloop"
    for host in ("192.0.2.1", "example.com"):
        with pytest.raises(guard.NetworkGuardError):
            run_async(reach(host))
    assert len(_take_violations()) == 2


async def test_the_test_loop_is_guarded() -> None:
    with pytest.raises(guard.NetworkGuardError):
        await asyncio.open_connection("192.0.2.1", 443)
    assert _take_violations()


def test_loopback_keeps_working(loopback_server: str) -> None:
    assert httpx.get(loopback_server).text == "ok"

    async def fetch() -> str:
        async with httpx.AsyncClient() as client:
            return (await client.get(loopback_server.replace("127.0.0.1", "localhost"))).text

    assert run_async(fetch()) == "ok"
    assert guard.VIOLATIONS == []


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost", "0.0.0.0", None])
def test_this_machine_is_local(host: str | None) -> None:
    assert guard.is_local(host)


def test_the_environment_is_scrubbed_of_credentials() -> None:
    environ = {
        "OPENAI_API_KEY": "sk-real-0123456789",
        "ANTHROPIC_API_KEY": "sk-ant-0123456789",
        "OPENAI_BASE_URL": "https://proxy.example.com/v1",
        "HF_TOKEN": "hf_0123456789",
        "PATH": "/usr/bin",
        "SIMULATOR_REQUIRE_ALL": "1",
    }
    removed = guard.scrub_environment(environ)
    assert set(removed) == {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "HF_TOKEN"}
    assert environ == {"PATH": "/usr/bin", "SIMULATOR_REQUIRE_ALL": "1"}
    # This session's own environment was scrubbed when it started.
    assert not [name for name in os.environ if guard.SECRET_NAME.search(name)]


def test_a_request_carrying_a_real_key_is_a_violation(
    loopback_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guard, "REAL_KEYS", {"sk-real-key-from-the-environment"})
    httpx.get(loopback_server, headers={"Authorization": "Bearer test-key"})
    assert guard.VIOLATIONS == []  # a fake key is fine
    httpx.get(loopback_server, headers={"Authorization": "Bearer sk-real-key-from-the-environment"})

    async def with_aiohttp() -> None:
        import aiohttp

        async with (
            aiohttp.ClientSession(headers={"x-api-key": "sk-real-key-from-the-environment"}) as session,
            session.get(loopback_server) as response,
        ):
            await response.read()

    run_async(with_aiohttp())
    found = _take_violations()
    assert len(found) == 2 and all("carries a real API key" in v for v in found)
