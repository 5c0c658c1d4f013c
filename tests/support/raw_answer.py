"""A raw HTTP/1.1 server that answers every POST with the exact bytes a test gives: redirects, odd statuses,
bodies that are not JSON, encodings nobody asked for, broken framing, connections cut or reset. The fake
LLM server (aiohttp, well-formed by design) sends none of these."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Literal

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]
After = Literal["keep", "close", "reset"]


def answer(status: bytes, *headers: bytes, body: bytes = b"", length: bool = True) -> bytes:
    """An answer's bytes: `HTTP/1.1 <status>`, the headers, a Content-Length (unless told not), the body."""
    lines = [b"HTTP/1.1 " + status, *headers]
    if length:
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class RawAnswer:
    """`async with RawAnswer(raw, after) as server:` answers each POST at `server.url` with `raw` (bytes, or
    an async function given the writer), then keeps the connection for the next request, closes it or
    resets it (`after`); `server.requests` counts the requests read."""

    def __init__(self, raw: bytes | Writer, after: After = "keep") -> None:
        self.raw = raw
        self.after = after
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> RawAnswer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request read and answered; whether the connection stays for another."""
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        await reader.readexactly(length)
        self.requests += 1
        if isinstance(self.raw, bytes):
            writer.write(self.raw)
            await writer.drain()
        else:
            await self.raw(writer)
        if self.after == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        return self.after == "keep"
