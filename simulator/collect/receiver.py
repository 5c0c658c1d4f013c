"""The OTLP/HTTP receiver: `POST /v1/traces` and `POST /v1/logs` (protobuf or JSON, gzip or not), and
`GET /status`, on the desk's stack (Starlette, served by uvicorn on its httptools parser where installed).

Bounded at every step: the per-client rate limit answers 429 with Retry-After; a full assembler (too many
open spans held) answers 503 with Retry-After, so memory stays bounded and the exporter retries later; the
body is read chunk by chunk and refused (413) as soon as it passes the limit, before and after gunzip. On a
non-loopback bind every request needs the token (`Authorization: Bearer`), as the desk does; on a loopback
one only the loopback host names are served (a DNS-rebinding page cannot post to it).

At one span a request (an SDK's SimpleSpanProcessor) Starlette's routing and middleware cost 0.01-0.04 ms of
the ~1.1 ms a request; the HTTP parser was the large share (docs/performance.md "Collect").
"""

from __future__ import annotations

__all__ = ["create_receiver"]

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from simulator.bearer import token_ok
from simulator.collect.answers import accepted_answer
from simulator.collect.decode import BodyError, decode_export, read_limited
from simulator.collect.service import Collector
from simulator.config.patterns import PatternTimeout

BUSY_RETRY_S = 5


def _refuse(status: int, message: str, retry_after: str | None = None) -> Response:
    headers = {"Retry-After": retry_after} if retry_after else None
    return PlainTextResponse(message, status, headers=headers)


def _handler(collector: Collector, kind: str, token: str | None) -> Any:
    async def export(request: Request) -> Response:
        if token is not None and not token_ok(request, token):
            return _refuse(401, "this collector needs its token: send Authorization: Bearer <token>")
        client = request.client.host if request.client else "unknown"
        wait = collector.limiter.take(client, time.monotonic())
        if wait > 0:
            collector.counts["refused_rate"] += 1
            return _refuse(
                429, "too many requests from this client; retry later", collector.limiter.retry_after(wait)
            )
        if collector.assembler.full:
            collector.counts["refused_busy"] += 1
            return _refuse(
                503, "the collector holds as many open spans as it may; retry later", str(BUSY_RETRY_S)
            )
        limit = collector.options.max_body
        headers = request.headers  # each lookup scans the header list: the content type is read once
        declared = headers.get("content-length", "")
        content_type = headers.get("content-type", "")
        try:
            if declared.isdigit() and int(declared) > limit:
                raise BodyError(413, f"request body over the limit of {limit} bytes; send smaller batches")
            body = await read_limited(request.stream(), limit)
            decoded = decode_export(body, content_type, headers.get("content-encoding", ""), kind, limit)
            await collector.accept_durably(decoded)  # answered once its spans are on disk
        except ClientDisconnect:  # gone before its body was read: nobody to answer, and nothing to log
            return _refuse(400, "the client went away before its body was read")
        except BodyError as exc:
            collector.counts[f"refused_{exc.status}"] += 1
            return _refuse(exc.status, str(exc))
        except ValueError as exc:
            collector.counts["refused_400"] += 1
            return _refuse(400, str(exc))
        except PatternTimeout as exc:  # the operator's own redaction rule: refused, never kept unredacted
            collector.counts["refused_redaction"] += 1
            return _refuse(422, f"nothing kept: {exc}")
        except OSError as exc:  # the spool could not be written or synced: nothing is answered accepted
            collector.counts["refused_disk"] += 1
            collector.disk_failed(exc)
            return _refuse(
                503,
                f"the collector could not write its spool to disk ({exc.strerror or exc}); nothing of this "
                "request is acknowledged: retry later",
                str(BUSY_RETRY_S),
            )
        return accepted_answer(decoded, kind, content_type)

    return export


def create_receiver(
    collector: Collector,
    *,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    tick_s: float = 1.0,
    background: Any = None,
) -> Starlette:
    """The receiver app; its lifespan recovers the journal, runs the close loop and stops cleanly."""
    import asyncio

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

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        collector.start()  # nothing to do when the command line started it before serving
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

    async def health(request: Request) -> Response:
        if token is not None and not token_ok(request, token):
            return _refuse(401, "this collector needs its token: send Authorization: Bearer <token>")
        return JSONResponse(collector.status())

    return Starlette(
        routes=[
            Route("/v1/traces", _handler(collector, "traces", token), methods=["POST"]),
            Route("/v1/logs", _handler(collector, "logs", token), methods=["POST"]),
            Route("/status", health, methods=["GET"]),
        ],
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or ["127.0.0.1", "localhost"])
        ],
        lifespan=lifespan,
    )
