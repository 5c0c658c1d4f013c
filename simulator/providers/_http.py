"""What both SDK providers share about HTTP: the aiohttp transport, Retry-After, what to fix on a 4xx."""

from __future__ import annotations

__all__ = ["aiohttp_client", "classify_sdk_error", "retry_after_s"]

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from simulator.providers.base import ProviderError
from simulator.providers.ratelimits import RateLimits, rate_limits_from_headers


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
    return factory(timeout=timeout_s) if factory is not None else None


_SDK_PREFIX = re.compile(r"^Error code: \d+ - ")
_FIXES = {
    400: "check the request settings (max_tokens, temperature, output schema, tools) for this model",
    403: "the key may not use this model; check its permissions",
    404: "check the model name and the base_url",
    413: "the request is too large; shorten the prompt or the transcript",
    422: "check the request settings (max_tokens, temperature, output schema, tools) for this model",
}


def permanent_message(who: str, status: int, message: str) -> str:
    """`<who> answered <status>: <message>; <what to fix>`, for errors that a retry cannot fix."""
    fix = _FIXES.get(status)
    message = _SDK_PREFIX.sub("", message)  # the SDKs start with "Error code: 400 - "
    return f"{who} answered {status}: {message}" + (f"; {fix}" if fix else "")


def retry_after_s(exc: Any) -> float | None:
    """The wait a server asked for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _is_timeout(sdk: Any, exc: BaseException) -> bool:
    """A timeout, whether the SDK wrapped it (APITimeoutError) or its HTTP client raised it directly
    (httpx's ReadTimeout, asyncio's TimeoutError) on the raw request path."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sdk.APITimeoutError | TimeoutError) or "Timeout" in type(current).__name__:
            return True
        current = current.__cause__ or current.__context__
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


def _limits(exc: Any) -> RateLimits | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    return rate_limits_from_headers(headers) if headers else None


def classify_sdk_error(
    sdk: Any,
    exc: Exception,
    *,
    who: str,
    key_env: str,
    transient_statuses: tuple[int, ...] = (408, 409),
    where: str | None = None,
    timeout_s: float | None = None,
) -> ProviderError:
    """Classify an anthropic or openai SDK exception (the two share one hierarchy) for the retry policy."""
    if isinstance(exc, ProviderError):  # already classified (an answer past its byte cap)
        return exc
    if isinstance(exc, sdk.RateLimitError):
        return ProviderError(
            "rate_limit", str(exc), retry_after=retry_after_s(exc), status=429, rate_limits=_limits(exc)
        )
    if isinstance(exc, sdk.AuthenticationError):
        return ProviderError("permanent", f"{who} rejected the API key (401); check {key_env}", status=401)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status >= 500 or status in transient_statuses:
            return ProviderError("transient", str(exc), retry_after=retry_after_s(exc), status=status)
        return ProviderError("permanent", permanent_message(who, status, exc.message), status=status)
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderError("transient", f"invalid response body: {exc}")
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
    return ProviderError("transient", f"{type(exc).__name__}: {exc}")
