"""A cap on every request body the desk reads, enforced while it streams in.

A 200 MB POST was read in full before anything refused it. This ASGI middleware answers 413 at once when
`Content-Length` says too much, and otherwise counts the bytes as the application reads them, stopping the
read (413) the moment they pass the cap: a body sent in chunks, with no length, or with a length smaller
than what follows, is cut the same way. Every reader of a body (forms, urlencoded or multipart, JSON, the
CSRF check) sits inside it: the cap is counted on what arrives, never taken from a header.
"""

from __future__ import annotations

__all__ = ["MAX_BODY_BYTES", "BodyLimit", "read_form"]

from typing import Any

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from simulator.errors import UserError
from simulator.serve.config import MAX_BODY_BYTES

# Fields and files a desk form may hold: its own forms have a few dozen (a label sheet's rows at most).
MAX_FORM_FIELDS = 1000


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
        text = (
            f"refused: the request body is larger than the desk's {self.max_bytes:,} bytes; send less "
            "(edit a large file in your editor), or start the desk with a larger `simulator serve --max-body`"
        ).encode()
        headers: list[Any] = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", b"%d" % len(text)),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": text})


async def read_form(request: Request) -> FormData:
    """The request's form (urlencoded or multipart) as every desk page reads it: a part may be as large as
    the body cap itself (the cap on the whole body is `BodyLimit`'s; python-multipart's own 1 MB a part
    would refuse a long edited file with its own text), and a form it cannot read is one UserError line."""
    cap = request.app.state.desk.config.max_body
    try:
        return await request.form(max_files=MAX_FORM_FIELDS, max_fields=MAX_FORM_FIELDS, max_part_size=cap)
    except HTTPException:
        raise UserError(
            f"the form could not be read: it holds more than {MAX_FORM_FIELDS:,} fields or files, or is not "
            "a well-formed form; send it from the desk's own page"
        ) from None
