"""POST a plain JSON body through an official SDK client's own connection pool, and read the JSON once.

The SDKs' `create(...)` walks the typed params, deep-copies its request options, builds a request model per
call and a typed response model per answer: on the bench that was most of the engine's CPU per call. Our
payloads are already plain JSON and we read the answer as a dict, so this sends it with the SDK's own
headers (auth, version, platform: built once by the SDK for this path), its timeouts, and raises the SDK's
own error classes for a 4xx or 5xx (so retry classification and Retry-After are unchanged). The answer's
headers come back too: they carry the provider's rate-limit budget.

Three levels, the fastest the client allows:

- the SDK's vendored aiohttp transport (what `DefaultAioHttpClient` uses): the request goes straight to that
  transport's aiohttp session, with the headers, timeout and proxy the transport would have used, and its
  own exception mapping. This skips the HTTP client's request and response models on the success path
  (half of what was left of the per-call CPU); an error answer is wrapped in the client's response type so
  that the SDK builds its own error from it. The answer is read as the engine's own pool reads it (`_httppool`):
  its headers' characters checked, its body decoded by the pool's gzip/deflate decoder (aiohttp's decoding
  off), so an answer in an encoding not asked for is one thing on both paths, an error status in one too;
- any other HTTP client given to the SDK: one prepared request through that client's `send`, its answer
  read as the pool reads one too (`answer_pieces`, which the streamed calls read through as well);
- an SDK version without these lower-level pieces: its public `client.post(...)`.
"""

from __future__ import annotations

__all__ = ["STREAM_HEADERS", "SdkPost", "answer_pieces", "dumps_json", "joined_headers", "loads_json"]

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import orjson

from simulator.inflate import ACCEPT_ENCODING
from simulator.jsonbounds import loads_bounded
from simulator.providers._answer import readable_body, unanswered, unreadable
from simulator.providers._httppool import NetworkError, decoded, header_fault, reason_fault
from simulator.providers.base import ProviderError

_EMPTY: Mapping[str, str] = {}
# The most one answer may hold, decompressed (a long completion is a few hundred kilobytes).
MAX_ANSWER_BYTES = 64_000_000
# The header a streamed request adds (`extra_headers`), so that its answer can be read by `answer_pieces`.
STREAM_HEADERS = {"Accept-Encoding": ACCEPT_ENCODING}


def dumps_json(payload: Any) -> bytes:
    """The request body: orjson (ten times faster than `json` on these payloads), or `json` for what orjson
    refuses (text with lone surrogates, keys that are not strings), so no payload fails that worked before."""
    try:
        return orjson.dumps(payload)
    except TypeError:
        return json.dumps(payload).encode()


def loads_json(body: bytes) -> Any:
    """The answer's JSON; what orjson refuses (lone surrogates, a byte order mark, nesting past its limit)
    goes to the one bounded reader, which takes what JSON allows and says in words why it refuses the rest
    (JSONRefused, a ValueError, which the callers turn into `_answer.unreadable`)."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return loads_bounded(body, "the answer")


class SdkPost:
    """`await post(payload)` -> (the JSON body as a dict or whatever it decoded to, its rate-limit headers)."""

    def __init__(self, sdk: Any, client: Any, path: str) -> None:
        self._client = client
        self._path = path
        timeout = client.timeout
        read = timeout if isinstance(timeout, int | float) else getattr(timeout, "read", None)
        self._deadline_s: float | None = float(read) if read else None
        self._fast = False
        self._direct: _DirectAiohttp | None = None
        try:
            options = sdk._models.FinalRequestOptions.construct(
                method="post", url=path, timeout=client.timeout
            )
            self._http = client._client
            # One request built the ordinary way gives the merged headers (the SDK's and the HTTP client's)
            # and the timeout; every call reuses them instead of merging them again.
            template = self._http.build_request(
                "POST", client._prepare_url(path), headers=client._build_headers(options)
            )
            template.headers.pop("content-length", None)
            template.headers["Accept-Encoding"] = ACCEPT_ENCODING  # what `decoded` reads, on every path
            self._request = type(template)
            self._url = template.url
            self._headers = template.headers
            self._extensions = template.extensions
            self._status_error = client._make_status_error_from_response
            self._fast = True
            self._direct = _DirectAiohttp.for_client(self._http, template)
        except (AttributeError, TypeError):  # an SDK without these internals: its public path
            pass

    async def __call__(self, payload: dict[str, Any]) -> tuple[Any, Mapping[str, str]]:
        # The timeout is the whole call's deadline, not only each read's: an answer that sends its headers
        # and then a byte a second is cut at it (a TimeoutError, classified as a timeout and retried).
        async with asyncio.timeout(self._deadline_s):
            return await self._call(payload)

    async def _call(self, payload: dict[str, Any]) -> tuple[Any, Mapping[str, str]]:
        if self._direct is not None:
            status, raw_headers, body = await self._direct.post(dumps_json(payload))
            if status >= 400:
                raise self._status_error(self._direct.response(status, raw_headers, body))
            return self._answer(status, raw_headers, body)
        if not self._fast:
            return await self._client.post(self._path, body=payload, cast_to=dict), _EMPTY
        request = self._request(
            "POST", self._url, headers=self._headers, content=dumps_json(payload), extensions=self._extensions
        )
        response = await self._http.send(request, stream=True)
        try:
            content = b"".join([chunk async for chunk in _capped(answer_pieces(response))])
        finally:
            await response.aclose()
        raw = response.headers.raw
        if response.status_code >= 400:
            raise self._status_error(
                _error_response(type(response), request, response.status_code, raw, content)
            )
        return self._answer(response.status_code, raw, content)

    def _answer(
        self, status: int, raw: Sequence[tuple[bytes, bytes]], content: bytes
    ) -> tuple[Any, Mapping[str, str]]:
        """A status below 400's answer: a 2xx's JSON and rate-limit headers; any other is no answer."""
        if 200 <= status < 300:
            try:
                answer = loads_json(content)
            except ValueError as exc:
                raise unreadable(str(self._url), status, raw, content, str(exc)) from None
            return answer, _rate_limit_headers(raw)
        raise unanswered(str(self._url), self._path, status, raw)


class _DirectAiohttp:
    """The request the SDK's vendored aiohttp transport would send, sent to its aiohttp session directly."""

    def __init__(
        self, transport: Any, template: Any, errors: Callable[[], AbstractContextManager[None]]
    ) -> None:
        from aiohttp import BasicAuth, ClientTimeout
        from multidict import CIMultiDict, CIMultiDictProxy
        from yarl import URL

        self._transport = transport
        self._template = template
        self._errors = errors
        # Parsed and merged once: aiohttp takes a URL and a header multidict as they are.
        self._url = URL(str(template.url))
        self._headers = CIMultiDictProxy(CIMultiDict(template.headers.multi_items()))
        timeout = template.extensions.get("timeout", {})
        self._timeout = ClientTimeout(
            sock_connect=timeout.get("connect"), sock_read=timeout.get("read"), connect=timeout.get("pool")
        )
        proxy = transport.proxy
        self._proxy = {
            "proxy": str(proxy.url) if proxy else None,
            "proxy_auth": BasicAuth(proxy.auth[0], proxy.auth[1]) if proxy and proxy.auth else None,
            "proxy_headers": proxy.headers if proxy else None,
        }

    @classmethod
    def for_client(cls, http: Any, template: Any) -> _DirectAiohttp | None:
        """The direct path when `http` is a plain client over the SDK's vendored aiohttp transport (no event
        hooks or auth flow that a direct request would skip); None otherwise."""
        transport = http._transport_for_url(template.url)
        module = sys.modules.get(type(transport).__module__)
        errors = getattr(module, "map_aiohttp_exceptions", None)
        hooks = http.event_hooks
        if (
            type(transport).__name__ != "AiohttpTransport"
            or errors is None
            or not hasattr(transport, "get_client")
            or hooks.get("request")
            or hooks.get("response")
            or http.auth is not None
        ):
            return None
        return cls(transport, template, errors)

    def _session(self) -> Any:
        from aiohttp import ClientSession

        transport = self._transport
        if not isinstance(transport.client, ClientSession):  # the transport builds its session lazily too
            transport.client = transport.get_client()
        return transport.client

    async def post(self, body: bytes) -> tuple[int, Sequence[tuple[bytes, bytes]], bytes]:
        """(status, raw headers, body) of one POST; network errors come out as the HTTP client's own, and
        what the engine's pool refuses in an answer as the pool's `NetworkError` (said the same way)."""
        try:
            async with self._session().request(
                "POST",
                self._url,
                data=body,
                headers=self._headers,
                allow_redirects=False,
                timeout=self._timeout,
                auto_decompress=False,  # decoded below, as the pool decodes (aiohttp >= 3.9)
                **self._proxy,
            ) as response:
                raw = response.raw_headers
                reason = (response.reason or "").encode("utf-8", "surrogateescape")  # as aiohttp decoded it
                fault = reason_fault(reason) or header_fault(raw)
                if fault is not None:
                    raise NetworkError("RemoteProtocolError", fault)
                content = b"".join([c async for c in _capped(decoded(response.content.iter_any(), raw))])
                return response.status, raw, content
        except (NetworkError, ProviderError):
            raise
        except Exception as exc:
            fault = _refused_header(exc)
            if fault is not None:  # aiohttp's parser refused a NUL itself: said as the pool says it
                raise NetworkError("RemoteProtocolError", fault) from exc
            # The transport's own mapping to the HTTP client's errors, entered only when there is an error
            # (a context manager around every call costs more than the rest of this method).
            with self._errors():
                raise exc
            raise  # unreachable: the mapping re-raises every error, mapped or as it was

    def response(self, status: int, raw_headers: Sequence[tuple[bytes, bytes]], body: bytes) -> Any:
        """An error answer as the HTTP client's response, from which the SDK builds its own error."""
        module = sys.modules[type(self._template).__module__]  # the HTTP client's models module
        return _error_response(module.Response, self._template, status, raw_headers, body)


def _error_response(
    response_type: Any, request: Any, status: int, raw_headers: Sequence[tuple[bytes, bytes]], body: bytes
) -> Any:
    """An error answer, its body already decoded, as the HTTP client's response (`response_type`), from which
    the SDK builds its own error (its body none when it is in an encoding not asked for: `readable_body`)."""
    headers = [(k, v) for k, v in raw_headers if k.lower() not in (b"content-encoding", b"content-length")]
    return response_type(
        status_code=status, headers=headers, content=readable_body(raw_headers, body), request=request
    )


def answer_pieces(response: Any) -> AsyncIterator[bytes]:
    """An HTTP client's streamed answer (httpx's) read as the engine's pool reads one: its status line and
    headers checked (`reason_fault`, `header_fault`), its body decoded by `decoded` (httpx's own decoders
    take a gzip body cut short as its decoded prefix); NetworkError for either. The request must have asked
    for gzip and deflate only (`ACCEPT_ENCODING`): another encoding passes undecoded."""
    raw = response.headers.raw
    fault = reason_fault(response.extensions.get("reason_phrase", b"")) or header_fault(raw)
    if fault is not None:
        raise NetworkError("RemoteProtocolError", fault)
    return decoded(response.aiter_raw(), raw)


def _refused_header(exc: BaseException) -> str | None:
    """`header_fault`'s words for aiohttp's own refusal of a header's value (its parser refuses a NUL:
    `InvalidHeader`, holding the value), or None for any other error."""
    current: BaseException | None = exc
    for _ in range(8):
        if current is None:
            return None
        value = current.args[0] if type(current).__name__ == "InvalidHeader" and current.args else None
        if isinstance(value, bytes | str):
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            return header_fault([(b"", raw)])
        current = current.__cause__ or current.__context__
    return None


async def _capped(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The answer's chunks (decompressed) up to MAX_ANSWER_BYTES: an endless stream or a gzip bomb ends
    as a provider error there, never as gigabytes in memory."""
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ProviderError(
                "permanent",
                f"the provider's answer is longer than {MAX_ANSWER_BYTES:,} bytes; it was cut there",
            )
        yield chunk


def _rate_limit_headers(raw: Any) -> Mapping[str, str]:
    """The rate-limit headers only, names lower-cased: one pass over the raw bytes instead of a lookup
    per header name (each lookup in the HTTP client's header object decodes and scans every header)."""
    return joined_headers(raw, b"ratelimit") or _EMPTY


def joined_headers(raw: Any, only: bytes = b"") -> dict[str, str]:
    """Raw (name, value) headers whose lower-case name holds `only`, by that name; a header sent twice is
    joined by commas, as the HTTP client's headers join it (the SDK's errors read those)."""
    found: dict[str, str] = {}
    for name, value in raw:
        if only in name.lower():
            key, text = name.decode("latin-1").lower(), value.decode("latin-1")
            found[key] = f"{found[key]}, {text}" if key in found else text
    return found
