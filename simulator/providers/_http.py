"""What both SDK providers share about HTTP: the aiohttp transport, Retry-After, what to fix on a 4xx."""

from __future__ import annotations

__all__ = ["aiohttp_client", "permanent_message", "retry_after_s"]

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any


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
