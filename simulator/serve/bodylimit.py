"""A cap on every request body the desk reads, enforced while it streams in.

A 200 MB POST was read in full before anything refused it. This ASGI middleware answers 413 at once when
`Content-Length` says too much, and otherwise counts the bytes as the application reads them, stopping the
read (413) the moment they pass the cap: a body sent in chunks, or with no length, is cut the same way.
"""

from __future__ import annotations

__all__ = ["MAX_BODY_BYTES", "BodyLimit"]

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Forms, labels and edited files: a few hundred kilobytes at most.
MAX_BODY_BYTES = 2_000_000


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse (413) any request whose body is larger than `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        started = exceeded = False

        async def counted() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    exceeded = True
                    raise _TooLarge
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except Exception:  # the cut read, however a middleware wrapped it (an exception group)
            if not exceeded:
                raise
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        text = f"refused: the request body is larger than {self.max_bytes:,} bytes".encode()
        headers: list[Any] = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", b"%d" % len(text)),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": text})
