"""A server's listening sockets, bound before it starts: an address it cannot have is one line and the fix.

Every server the user points at an address (`simulator serve`, `simulator collect`, the fake LLM server,
the example bots under examples/) binds here first and hands the sockets to its web framework (uvicorn's `Server.run(sockets=...)`,
aiohttp's `SockSite`). A port taken by another program (EADDRINUSE), one below 1024 without the rights
(EACCES), a host that is not this machine's (EADDRNOTAVAIL) or no host name at all becomes a UserError naming
`host:port`, what is wrong and the fix, instead of the framework's log line and exit 1 (or, for a script
run by hand, a traceback: `exit_on_unlistenable` ends it with that line and exit code 2). Binding first also
tells the caller the port `0` picked, so what it prints is the address it listens on.
"""

from __future__ import annotations

__all__ = ["address_of", "exit_on_unlistenable", "listening_socket", "listening_sockets"]

import contextlib
import errno
import socket
import sys
from collections.abc import Iterator

from simulator.errors import UserError
from simulator.visible import echo

_LOOPBACK, _EVERYWHERE = "127.0.0.1", "0.0.0.0"  # the two addresses every machine has, as fixes to offer


def _shown(host: str, port: int) -> str:
    """`host:port` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def address_of(sockets: list[socket.socket]) -> tuple[str, int]:
    """The host and port the first socket listens on (the port `0` picked, once bound)."""
    host, port = sockets[0].getsockname()[:2]
    return str(host), int(port)


def _problem(exc: BaseException, host: str, port: int, port_fix: str, host_fix: str) -> str:
    """What is wrong with `host:port`, in words, and the fix; `port_fix`/`host_fix` are templates of
    the setting to change (`--port {0}`), filled with an example value."""
    other_port = port + 1 if 0 < port < 65535 else 8000
    any_port = f"{port_fix.format(other_port)}, or {port_fix.format(0)} for any free one"
    own_host = f"{host_fix.format(_LOOPBACK)} (this machine only) or {host_fix.format(_EVERYWHERE)} (every network interface)"
    code = getattr(exc, "errno", None)
    if isinstance(exc, socket.gaierror | UnicodeError):
        why = exc.strerror if isinstance(exc, socket.gaierror) else "an empty or over-long part"
        return f"'{host}' is not a host name this machine knows ({why}); use one of its addresses: {own_host}"
    if code == errno.EADDRINUSE:
        return (
            f"port {port} is already in use by another program; stop it, or choose another port: {any_port}"
        )
    if code in (errno.EACCES, errno.EPERM) and 0 < port < 1024:
        high = f"{port_fix.format(8000 + port)}, or {port_fix.format(0)} for any free one"
        return f"ports below 1024 need administrator rights; choose one from 1024 up: {high}"
    if code in (errno.EACCES, errno.EPERM):
        return f"not allowed to listen there (permission denied); choose another port: {any_port}"
    if code == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine; use one of its own: {own_host}"
    reason = getattr(exc, "strerror", None) or str(exc)
    return f"{reason}; choose another address: {own_host}, or another port: {any_port}"


def listening_sockets(
    host: str, port: int, *, port_fix: str = "--port {0}", host_fix: str = "--host {0}"
) -> list[socket.socket]:
    """TCP sockets listening on `host:port` (one per address the host name has; port 0: the OS picks one),
    for the caller's server to serve on; a UserError naming the address, what is wrong and the fix when it
    cannot be had.
    `port_fix` and `host_fix` say how the caller's user sets them (`--port {0}`, `FakeLLMServer(port={0})`)."""
    where = _shown(host or _EVERYWHERE, port)
    if not 0 <= port <= 65535:
        raise UserError(
            f"cannot listen on {where}: {port} is not a port number; use one from 1 to 65535: "
            f"{port_fix.format(8000)}, or {port_fix.format(0)} for any free one"
        )
    bound: list[socket.socket] = []
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        # One socket per address, as asyncio's create_server binds them; with port 0 only the first, so
        # the one port the OS picks is the only one there is.
        addresses = list(dict.fromkeys((info[0], info[4]) for info in infos))
        for family, address in addresses[: 1 if port == 0 else None]:
            sock = socket.socket(family, socket.SOCK_STREAM)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a just-stopped server's port
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen()  # the address printed next accepts at once (queued until the server serves)
    except (OSError, UnicodeError) as exc:
        for sock in bound:
            sock.close()
        raise UserError(
            f"cannot listen on {where}: {_problem(exc, host, port, port_fix, host_fix)}"
        ) from None
    return bound


def listening_socket(
    host: str, port: int, *, port_fix: str = "--port {0}", host_fix: str = "--host {0}"
) -> socket.socket:
    """One socket listening on `host:port`, for a server that serves one (the standard library's
    `http.server`): the first address of a host name that has several; UserError as `listening_sockets`."""
    first, *others = listening_sockets(host, port, port_fix=port_fix, host_fix=host_fix)
    for sock in others:
        sock.close()
    return first


@contextlib.contextmanager
def exit_on_unlistenable() -> Iterator[None]:
    """For a script run by hand that listens (the fake LLM server's command line, the example bots): an address
    it cannot listen on (the UserError above, raised inside) ends the script with that one line on standard
    error and exit code 2, as `simulator serve` ends on it, never with a traceback."""
    try:
        yield
    except UserError as exc:
        echo(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
