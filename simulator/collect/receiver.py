"""The OTLP/HTTP receiver: `POST /v1/traces` and `POST /v1/logs` (protobuf or JSON, gzip or not), and
`GET /status`, as a plain ASGI app served by uvicorn (on its httptools parser where installed).

Bounded at every step: the per-client rate limit answers 429 with Retry-After; a full assembler (too many
open spans held) answers 503 with Retry-After, so memory stays bounded and the exporter retries later; the
body is read chunk by chunk and refused (413) as soon as it passes the limit, before and after gunzip. On a
non-loopback bind every request needs the token (`Authorization: Bearer`), as the desk does; on a loopback
one only the loopback host names are taken (a DNS-rebinding page cannot post to it).

Why no web framework: at one span a request (an SDK's SimpleSpanProcessor) the per-request objects of
routing and middleware were most of the collector's CPU (docs/performance.md "Collect"). Three fixed routes
need no router: the app reads the ASGI scope itself, and nearly every answer is a constant.
"""

from __future__ import annotations

__all__ = ["create_receiver"]

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from simulator.bearer import token_in
from simulator.collect.answers import JSON, Answer, accepted_answer, refusal
from simulator.collect.decode import BodyError, decode_export, read_limited
from simulator.collect.service import Collector
from simulator.collect.supervise import describe
from simulator.config.patterns import PatternTimeout

BUSY_RETRY_S = 5
LOOPBACK_HOSTS = ["127.0.0.1", "localhost"]
EXPORTS = {b"/v1/traces": "traces", b"/v1/logs": "logs"}

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

NEEDS_TOKEN = refusal(401, "this collector needs its token: send Authorization: Bearer <token>")
BAD_HOST = refusal(400, "Invalid host header")
NOT_FOUND = refusal(404, "Not Found")


class _Gone(Exception):
    """The client went away before its body was read: nothing to answer."""


async def _send(send: Send, answer: Answer, allow: bytes | None = None) -> None:
    headers = [(b"content-type", answer.media_type.encode()), (b"content-length", b"%d" % len(answer.body))]
    if answer.retry_after is not None:
        headers.append((b"retry-after", answer.retry_after.encode()))
    if allow is not None:
        headers.append((b"allow", allow))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


async def _chunks(receive: Receive) -> AsyncIterator[bytes]:
    """The request body as it arrives (`_Gone` when the client disconnects first)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def _host(value: str) -> str:
    """The host name of a Host header, without its port ("[::1]:4318" is "::1")."""
    if value.startswith("["):
        return value[1 : value.find("]")].lower() if "]" in value else ""
    return value.rsplit(":", 1)[0].lower() if value.count(":") == 1 else value.lower()


class _Receiver:
    """The ASGI app: per request, the host and token checks, then the route's handler."""

    def __init__(
        self,
        collector: Collector,
        token: str | None,
        allowed_hosts: list[str],
        lifespan: Callable[[], Any],
    ) -> None:
        self.collector = collector
        self.token = token
        self.any_host = "*" in allowed_hosts
        self.hosts = {h.lower() for h in allowed_hosts}
        self.lifespan = lifespan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await _send(send, *await self._http(scope, receive))
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":  # no WebSocket route: refused at the handshake
            await send({"type": "websocket.close", "code": 1000})

    async def _http(self, scope: Scope, receive: Receive) -> tuple[Answer, bytes | None]:
        """The answer (and the Allow header of a 405)."""
        headers: dict[bytes, bytes] = dict(scope["headers"])  # names are lower-case in ASGI
        if not self.any_host and _host(headers.get(b"host", b"").decode("latin-1")) not in self.hosts:
            return BAD_HOST, None
        if self.token is not None and not token_in(
            headers.get(b"cookie", b"").decode("latin-1"),
            scope.get("query_string", b"").decode("latin-1"),
            headers.get(b"authorization", b"").decode("latin-1"),
            self.token,
        ):
            return NEEDS_TOKEN, None
        path, method = scope.get("raw_path") or scope["path"].encode(), scope["method"]
        path = path.split(b"?", 1)[0]
        export = EXPORTS.get(path)
        if export is not None:
            if method != "POST":
                return refusal(405, "Method Not Allowed"), b"POST"
            try:
                return await self._export(export, scope, headers, receive), None
            except _Gone:
                return refusal(400, "the client went away before its body was read"), None
        if path == b"/status":
            if method not in ("GET", "HEAD"):
                return refusal(405, "Method Not Allowed"), b"GET, HEAD"
            body = json.dumps(self.collector.status(), ensure_ascii=False, separators=(",", ":"))
            return Answer(200, JSON, body.encode()), None
        return NOT_FOUND, None

    async def _export(self, kind: str, scope: Scope, headers: dict[bytes, bytes], receive: Receive) -> Answer:
        collector = self.collector
        client = scope["client"][0] if scope.get("client") else "unknown"
        wait = collector.limiter.take(client, time.monotonic())
        if wait > 0:
            collector.counts["refused_rate"] += 1
            return refusal(
                429, "too many requests from this client; retry later", collector.limiter.retry_after(wait)
            )
        if collector.assembler.full:
            collector.counts["refused_busy"] += 1
            return refusal(
                503, "the collector holds as many open spans as it may; retry later", str(BUSY_RETRY_S)
            )
        limit = collector.options.max_body
        declared = headers.get(b"content-length", b"")
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        try:
            if declared.isdigit() and int(declared) > limit:
                raise BodyError(413, f"request body over the limit of {limit} bytes; send smaller batches")
            body = await read_limited(_chunks(receive), limit)
            encoding = headers.get(b"content-encoding", b"").decode("latin-1")
            decoded = decode_export(body, content_type, encoding, kind, limit)
            await collector.accept_durably(decoded)  # answered once its spans are on disk
        except BodyError as exc:
            collector.counts[f"refused_{exc.status}"] += 1
            return refusal(exc.status, str(exc))
        except ValueError as exc:
            collector.counts["refused_400"] += 1
            return refusal(400, str(exc))
        except PatternTimeout as exc:  # the operator's own redaction rule: refused, never kept unredacted
            collector.counts["refused_redaction"] += 1
            return refusal(422, f"nothing kept: {exc}")
        except OSError as exc:  # the spool could not be written or synced: nothing is answered accepted
            collector.counts["refused_disk"] += 1
            collector.disk_failed(exc)
            return refusal(
                503,
                f"the collector could not write its spool to disk ({exc.strerror or exc}); nothing of this "
                "request is acknowledged: retry later",
                str(BUSY_RETRY_S),
            )
        return accepted_answer(decoded, kind, content_type)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Start (recover the journal, start the judge and the close loop) and stop, as the server says."""
        await receive()  # lifespan.startup
        try:
            running = self.lifespan()
            await running.__anext__()
        except Exception as exc:
            await send(
                {"type": "lifespan.startup.failed", "message": f"collect: cannot start ({describe(exc)})"}
            )
            raise
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        try:
            await running.__anext__()
        except StopAsyncIteration:
            pass
        except Exception as exc:
            await send(
                {"type": "lifespan.shutdown.failed", "message": f"collect: cannot stop ({describe(exc)})"}
            )
            raise
        await send({"type": "lifespan.shutdown.complete"})


def create_receiver(
    collector: Collector,
    *,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    tick_s: float = 1.0,
    background: Any = None,
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The receiver app; its lifespan recovers the journal, runs the close loop and stops cleanly."""

    async def loop() -> None:
        """Close idle conversations every tick. Supervised: a conversation that fails is quarantined inside
        `tick`; anything else that fails is said, counted (`/status` health) and tried again next tick."""
        while True:
            await asyncio.sleep(tick_s)
            try:
                collector.tick()
                if background is not None:
                    await background()
            except Exception as exc:
                collector.loop_failed(exc)

    async def lifespan() -> AsyncIterator[None]:
        collector.start()
        if collector.judge is not None:
            collector.judge.start()
        task = asyncio.create_task(loop())
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if collector.judge is not None:
                await collector.judge.stop()
            collector.stop()

    return _Receiver(collector, token, allowed_hosts or LOOPBACK_HOSTS, lifespan)
