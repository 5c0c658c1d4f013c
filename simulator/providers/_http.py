"""The HTTP transport the provider SDKs use: their own aiohttp client when aiohttp is installed."""

from __future__ import annotations

__all__ = ["aiohttp_client"]

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
