"""An httpx transport that caps an answer's size, for bots read through an SDK (the `openai_endpoint` bot).

The SDK reads the whole body itself, so the cap sits below it: the transport asks for an uncompressed
answer (`Accept-Encoding: identity`), refuses one that comes compressed anyway (a gzip bomb cannot be
measured before it is inflated), and stops reading past `max_bytes`. The deadline is the caller's
(`asyncio.timeout` around the whole call).
"""

from __future__ import annotations

__all__ = ["AnswerRefused", "capped_client"]

from collections.abc import AsyncIterator

# The OpenAI SDK is built on httpx2, a fork of httpx with the same transport API; older SDKs on httpx.
try:
    import httpx2 as httpx
except ImportError:  # pragma: no cover - an SDK release on plain httpx
    import httpx  # type: ignore[no-redef]
from simulator.tls import shared_ssl_context


class AnswerRefused(Exception):
    """The answer was cut: longer than the cap, or compressed although an uncompressed one was asked for."""


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, max_bytes: int) -> None:
        self._inner, self._max_bytes = inner, max_bytes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._max_bytes:
                raise AnswerRefused(f"the answer is longer than {self._max_bytes:,} bytes; it was cut there")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    def __init__(self, max_bytes: int, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._max_bytes = max_bytes
        self._inner = inner or httpx.AsyncHTTPTransport(verify=shared_ssl_context(httpx.__name__))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise AnswerRefused(
                f"the answer came compressed ({encoding}) although an uncompressed one was asked for; "
                "its size cannot be bounded before it is inflated"
            )
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _CappedStream(response.stream, self._max_bytes)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def capped_client(max_bytes: int, timeout_s: float) -> httpx.AsyncClient:
    """The HTTP client to give the SDK (`http_client=`): its answers capped at `max_bytes`."""
    return httpx.AsyncClient(transport=CappedTransport(max_bytes), timeout=timeout_s)
