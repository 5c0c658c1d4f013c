"""The test session's guard: no test opens a connection off this machine, and no test sees or sends a real
API key from the environment. `tests/conftest.py` installs it when the session starts; a test that trips
it fails, even when the code under test swallowed the refusal (a provider error recorded as an error).

- Connections: `socket.socket.connect` / `connect_ex` and `socket.getaddrinfo` refuse any address that is
  not loopback or this host's own, and so does the uvloop event loop the engine runs on (its libuv sockets
  never reach the socket module), through a guarded subclass of `uvloop.Loop`.
- Keys: every `*_API_KEY` / token variable (and the SDKs' base-URL variables) is removed from the
  environment for the session; an HTTP request (httpx or aiohttp) whose headers carry one of the removed
  values is a violation. Tests that need a key set a fake one with `monkeypatch.setenv`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# Variables whose value is a credential, or would send requests elsewhere.
SECRET_NAME = re.compile(
    r"(_API_KEY|_AUTH_TOKEN|_ACCESS_TOKEN|_SECRET_KEY)$"
    r"|^(HF_TOKEN|HUGGING_FACE_HUB_TOKEN|OPENAI_ORG_ID|OPENAI_PROJECT_ID|OPENAI_BASE_URL|ANTHROPIC_BASE_URL)$"
)

VIOLATIONS: list[str] = []  # what tests tried; the conftest fixture fails the test that did it
REAL_KEYS: set[str] = set()  # the values removed from the environment
_LOCAL_NAMES: set[str] = {"localhost", "localhost.localdomain", ""}
_LOCAL_ADDRESSES: set[str] = set()
_ORIGINAL: dict[str, Any] = {}


class NetworkGuardError(OSError):
    """A test tried to reach a host that is not this machine."""


def scrub_environment(environ: Any = os.environ) -> dict[str, str]:
    """Remove every credential-like variable from `environ`; return what was removed (name -> value)."""
    removed = {name: environ[name] for name in list(environ) if SECRET_NAME.search(name)}
    for name in removed:
        del environ[name]
    return removed


def is_local(host: Any) -> bool:
    """Whether `host` (a name or an address, from a socket address tuple) is this machine."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    text = str(host).strip("[]").split("%")[0].lower()
    if text in _LOCAL_NAMES or text in _LOCAL_ADDRESSES:
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False  # a name that is not this host's: resolving it would ask the network
    return address.is_loopback or address.is_unspecified


def _refuse(what: str, host: Any, port: Any = None) -> None:
    where = f"{host}:{port}" if port is not None else str(host)
    message = f"{what} {where}: tests never leave this machine (loopback only; tests/guard.py)"
    VIOLATIONS.append(message)
    raise NetworkGuardError(message)


def _check_address(address: Any, what: str) -> None:
    if isinstance(address, tuple) and address and not is_local(address[0]):
        _refuse(what, address[0], address[1] if len(address) > 1 else None)


def carries_real_key(values: Iterable[Any]) -> bool:
    """Whether any of `values` (header values) holds a key removed from the environment."""
    return any(key in str(value) for value in values for key in REAL_KEYS)


def check_headers(headers: Mapping[str, Any] | None, where: str) -> None:
    if headers and carries_real_key(headers.values()):
        VIOLATIONS.append(f"a request to {where} carries a real API key from the environment")


def _guard_sockets() -> None:
    original_connect, original_connect_ex = socket.socket.connect, socket.socket.connect_ex
    original_getaddrinfo = socket.getaddrinfo
    _ORIGINAL.update(
        connect=original_connect, connect_ex=original_connect_ex, getaddrinfo=original_getaddrinfo
    )

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check_address(address, "connect to")
        return original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check_address(address, "connect to")
        return original_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_local(host):
            _refuse("resolve", host)
        return original_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo


def _guarded_uvloop() -> None:
    """uvloop connects and resolves in libuv: its loop methods are checked in a subclass instead."""
    try:
        import uvloop
    except ImportError:
        return

    class GuardedLoop(uvloop.Loop):  # type: ignore[misc,name-defined]
        async def create_connection(
            self, protocol_factory: Any, host: Any = None, port: Any = None, **kw: Any
        ) -> Any:
            if not is_local(host):
                _refuse("connect to", host, port)
            return await super().create_connection(protocol_factory, host, port, **kw)

        async def getaddrinfo(self, host: Any, *args: Any, **kwargs: Any) -> Any:
            if not is_local(host):
                _refuse("resolve", host)
            return await super().getaddrinfo(host, *args, **kwargs)

        async def sock_connect(self, sock: Any, address: Any) -> Any:
            _check_address(address, "connect to")
            return await super().sock_connect(sock, address)

    GuardedLoop.__module__ = "uvloop.guarded"  # still a uvloop loop, for code that asks which loop runs
    _ORIGINAL["uvloop_new_event_loop"] = uvloop.new_event_loop
    uvloop.new_event_loop = GuardedLoop


def _guard_http_clients() -> None:
    import httpx

    def wrap(cls: Any, name: str, headers_of: Callable[..., Any]) -> None:
        original = getattr(cls, name)
        _ORIGINAL[f"{cls.__name__}.{name}"] = (cls, name, original)

        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            where, headers = headers_of(self, *args, **kwargs)
            check_headers(headers, where)
            return original(self, *args, **kwargs)

        setattr(cls, name, checked)

    def httpx_headers(self: Any, request: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
        return str(request.url.host), dict(request.headers)

    wrap(httpx.Client, "send", httpx_headers)
    wrap(httpx.AsyncClient, "send", httpx_headers)
    try:
        import aiohttp
    except ImportError:
        return

    def aiohttp_headers(self: Any, method: Any, url: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
        merged = {**dict(getattr(self, "_default_headers", None) or {}), **dict(kwargs.get("headers") or {})}
        return str(url), merged

    wrap(aiohttp.ClientSession, "_request", aiohttp_headers)


def install() -> None:
    """Scrub the environment's keys and guard sockets, uvloop and the HTTP clients, for this process."""
    if _ORIGINAL:
        return
    REAL_KEYS.update(v for v in scrub_environment().values() if len(v) >= 8)
    hostname = socket.gethostname()
    _LOCAL_NAMES.add(hostname.lower())
    # This host's own addresses (a local Ray cluster listens on them), read before resolving is guarded.
    with contextlib.suppress(OSError):
        _LOCAL_ADDRESSES.update(str(info[4][0]) for info in socket.getaddrinfo(hostname, None))
    _guard_sockets()
    _guarded_uvloop()
    _guard_http_clients()
