"""What both SDK providers share about HTTP: the aiohttp transport, Retry-After, what to fix on a 4xx, and
the classification of a failed call, the same whether the SDK or the engine's own pool made it.

An error status is classified by its status alone (429 a rate limit, 401 the key, 5xx and the provider's
transient statuses worth a retry, the rest permanent), which is all the SDKs' error classes say; so an error
answer the engine's pool received (`StatusAnswer`) is classified without importing the SDK, which costs a
second or two of the first error's time (its type tree), and reads the same as the SDK's error for it.
"""

from __future__ import annotations

__all__ = ["StatusAnswer", "aiohttp_client", "classify_sdk_error", "retry_after_s"]

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from simulator.providers._answer import excerpt, readable_body, status_words
from simulator.providers._httppool import NetworkError
from simulator.providers._sdkpost import joined_headers
from simulator.providers.base import ProviderError
from simulator.providers.ratelimits import rate_limits_from_headers
from simulator.tls import shared_ssl_context


def aiohttp_client(sdk: Any, timeout_s: float) -> Any:
    """The SDK's vendored aiohttp transport (`sdk.DefaultAioHttpClient`), or None for its httpx default.

    Measured on the bench, httpx's connection pool and models cost several times more CPU per call than
    aiohttp; at a thousand calls a second that CPU, not the provider, would limit a run.
    """
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return None
    factory = getattr(sdk, "DefaultAioHttpClient", None)
    if factory is None:
        return None
    # The SDK's client is its HTTP library's (httpx2, or httpx in older releases): its default context, shared.
    return factory(timeout=timeout_s, verify=shared_ssl_context(_client_library(factory)))


def _client_library(factory: Any) -> str:
    """The HTTP library a client class is built on: `httpx2` or `httpx`, by its base classes."""
    for base in getattr(factory, "__mro__", ()):
        root = base.__module__.split(".")[0]
        if root in ("httpx2", "httpx"):
            return root
    return "httpx"


_FIXES = {
    400: "check the request settings (max_tokens, temperature, output schema, tools) for this model",
    403: "the key may not use this model; check its permissions",
    404: "check the model name and the base_url",
    413: "the request is too large; shorten the prompt or the transcript",
    422: "check the request settings (max_tokens, temperature, output schema, tools) for this model",
}


class StatusAnswer(Exception):
    """An error status (4xx, 5xx) the engine's own pool received, classified as the SDK's error for it is."""

    def __init__(self, status: int, raw_headers: Sequence[tuple[bytes, bytes]], body: bytes) -> None:
        super().__init__(f"the server answered {status}")
        self.status = status
        self.headers = joined_headers(raw_headers)
        self.body = answer_body(readable_body(raw_headers, body))


def answer_body(content: bytes) -> Any:
    """An error answer's body as the SDKs read it: its JSON, else its text, stripped."""
    text = content.decode("utf-8", "replace").strip()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _sdk_body(exc: Any) -> Any:
    """The body of the SDK's error, read from its response's bytes as `StatusAnswer` reads them (the SDKs
    keep different parts of it: openai the `error` object alone); the SDK's own reading if none were read."""
    try:
        content = exc.response.content
    except (AttributeError, RuntimeError):  # no response, or its body not read (httpx's ResponseNotRead)
        content = None
    return answer_body(content) if isinstance(content, bytes) else getattr(exc, "body", None)


def said_in(body: Any) -> str:
    """What an error answer's body says (its JSON, or its text): its JSON error's message, else the start
    of its text (a web page's words without its tags); '' when it said nothing."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message") or inner.get("detail")
            if isinstance(message, str) and message.strip():
                return excerpt(message, 500)
        elif isinstance(inner, str) and inner.strip():
            return excerpt(inner, 500)
        return excerpt(json.dumps(body, default=str))
    if isinstance(body, str):
        return excerpt(body)
    return ""


def status_message(who: str, status: int, body: Any) -> str:
    """`<who> answered <status>: <what its body said>`, or with the status's phrase when it said nothing."""
    said = said_in(body)
    return f"{who} answered {status}: {said}" if said else f"{who} answered {status_words(status)}"


def status_error(
    status: int, headers: Mapping[str, str], body: Any, *, who: str, key_env: str,
    transient_statuses: tuple[int, ...],
) -> ProviderError:  # fmt: skip
    """An error status classified: a rate limit (429) waits what the server asked, a refused key (401) says
    which variable holds it, 5xx and the `transient_statuses` are retried, the rest say what to fix.
    `headers` look names up by lower case (httpx's do, `_sdkpost.joined_headers` are)."""
    if status == 429:
        return ProviderError(
            "rate_limit", status_message(who, 429, body), retry_after=retry_after_s(headers), status=429,
            rate_limits=rate_limits_from_headers(headers) if headers else None,
        )  # fmt: skip
    if status == 401:
        return ProviderError("permanent", f"{who} rejected the API key (401); check {key_env}", status=401)
    if status >= 500 or status in transient_statuses:
        return ProviderError(
            "transient", status_message(who, status, body), retry_after=retry_after_s(headers), status=status
        )
    fix = _FIXES.get(status)
    message = status_message(who, status, body) + (f"; {fix}" if fix else "")
    return ProviderError("permanent", message, status=status)


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asked for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date. A
    header sent twice (a proxy adding its own) reaches here joined by commas: the longest wait is kept."""
    if not headers:
        return None
    millis = _longest(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    return _longest(headers.get("retry-after"))


_HTTP_DATE = re.compile(r"[A-Za-z]{3},[^,]*")  # "Wed, 21 Oct 2015 07:28:00 GMT" up to the next comma


def _longest(value: str | None) -> float | None:
    """The longest wait among a Retry-After header's values (seconds or HTTP dates); None for none."""
    if not value:
        return None
    parts = [value] if "," not in value else [*_HTTP_DATE.findall(value), *value.split(",")]
    waits = [wait for wait in map(_wait_s, parts) if wait is not None]
    return max(waits) if waits else None


def _wait_s(value: str) -> float | None:
    """Seconds in one Retry-After value (a number, or an HTTP date), never negative; None for neither."""
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return None if math.isnan(seconds) else max(0.0, seconds)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _is_timeout(sdk: Any | None, exc: BaseException) -> bool:
    """A timeout, whether the SDK wrapped it (APITimeoutError) or its HTTP client raised it directly
    (httpx's ReadTimeout, asyncio's TimeoutError) on the raw request path. A timeout's name over a cause
    that is no timeout is not one: the SDKs' aiohttp transport calls every broken connection (a server
    that closed or reset it at once) a ConnectTimeout."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TimeoutError):
            return True
        cause = current.__cause__ or current.__context__
        if cause is None:
            sdk_timeout = sdk is not None and isinstance(current, sdk.APITimeoutError)
            return sdk_timeout or "Timeout" in type(current).__name__
        current = cause
    return False


def connection_refused(exc: BaseException) -> bool:
    """Whether a failed call was refused (nothing listens there), whatever the HTTP client wrapped it in: the
    openai SDK over aiohttp reports a refused connection as a timeout."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        current = current.__cause__ or current.__context__
    return False


def classify_sdk_error(
    sdk: Any | None,
    exc: Exception,
    *,
    who: str,
    key_env: str,
    transient_statuses: tuple[int, ...] = (408, 409),
    where: str | None = None,
    timeout_s: float | None = None,
) -> ProviderError:
    """Classify a failed call for the retry policy: an anthropic or openai SDK exception (the two share one
    hierarchy), or the engine's own pool's (`StatusAnswer`, `NetworkError`, a timeout). `sdk` is the SDK's
    module, or None where it was never imported (then no error can be one of its classes)."""
    if isinstance(exc, ProviderError):  # already classified (an answer past its byte cap)
        return exc
    answered: tuple[int, Mapping[str, str], Any] | None = None
    if isinstance(exc, StatusAnswer):
        answered = exc.status, exc.headers, exc.body
    elif sdk is not None and isinstance(exc, sdk.APIStatusError):
        answered = exc.status_code, getattr(exc.response, "headers", None) or {}, _sdk_body(exc)
    if answered is not None:
        return status_error(*answered, who=who, key_env=key_env, transient_statuses=transient_statuses)
    if sdk is not None and isinstance(exc, sdk.APIResponseValidationError):
        return ProviderError(
            "transient", f"the answer from {where or who} is not what the SDK expects ({exc})"
        )
    # Refused connections, timeouts, connection resets and bodies that are not JSON: worth another try.
    if connection_refused(exc):
        return ProviderError(
            "transient",
            f"connection refused by {where or who}: nothing listens there; start the server or check base_url",
        )
    if _is_timeout(sdk, exc) and timeout_s is not None:
        return ProviderError(
            "transient",
            f"{who} did not answer within {timeout_s:g} s (the provider's timeout_s); raise timeout_s for a slow model",
        )
    return ProviderError("transient", network_message(exc, where or who))


# A network failure in words, by the class of the error (httpx2's, the wire path's `NetworkError.kind` named
# after them, and aiohttp's, which the SDK's transport lets through): the same failure reads the same on
# either path.
_CONNECT = "could not connect to {where}"
_BROKE = "the connection to {where} broke before the whole answer came"
_NOT_HTTP = "the answer from {where} was not a whole HTTP/1.1 answer"
_UNDECODED = "the answer from {where} could not be decoded"
_NETWORK_WORDS = {
    "ConnectError": _CONNECT,
    "ClientConnectorError": _CONNECT,
    "ClientConnectorDNSError": _CONNECT,
    "ClientConnectorCertificateError": _CONNECT,
    "ClientConnectorSSLError": _CONNECT,
    "ClientSSLError": _CONNECT,
    "ReadError": _BROKE,
    "WriteError": _BROKE,
    "ClientOSError": _BROKE,
    "ClientPayloadError": _BROKE,
    "ServerDisconnectedError": _BROKE,
    "RemoteProtocolError": _NOT_HTTP,
    "LocalProtocolError": _NOT_HTTP,
    "ClientResponseError": _NOT_HTTP,  # aiohttp's parser refusing the answer (its "400" is no status)
    "DecodingError": _UNDECODED,
    "ContentEncodingError": _UNDECODED,  # aiohttp's, under its payload or response error
}


def network_message(exc: BaseException, where: str) -> str:
    """What failed, in words, then the error's own detail in brackets (one visible line). The deepest
    error named is the one said: the SDKs' transports wrap aiohttp's own errors in coarser classes (a
    server that closed the connection becomes a ConnectError, or a ConnectTimeout); the engine's pool's
    `NetworkError` is said as it is (over aiohttp's error, on the SDK path, when it says the same in words)."""
    seen: set[int] = set()
    found: tuple[str, BaseException] | None = None
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, NetworkError):  # the engine's own words for it: what it wraps is its detail
            found = (_NETWORK_WORDS.get(current.kind, "the call to {where} failed"), current)
            break
        words = _NETWORK_WORDS.get(type(current).__name__)
        if words is not None:
            found = (words, current)
        current = current.__cause__ or current.__context__
    if found is None:
        return f"the call to {where} failed ({type(exc).__name__}: {_detail(exc)})"
    return f"{found[0].format(where=where)} ({_detail(found[1])})"


def _detail(exc: BaseException) -> str:
    message = getattr(exc, "message", None)  # aiohttp's response errors: without their made-up status
    text = message if isinstance(message, str) and message else str(exc)
    return excerpt(text) or type(exc).__name__
