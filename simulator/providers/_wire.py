"""The SDK's request without importing the SDK: a run's start-up no longer pays for its type tree.

Importing `openai` or `anthropic` builds some 730 pydantic models (0.8-1.7 s of CPU on the bench machine),
all for a call path that sends a plain JSON body and reads a dict back (see `_sdkpost`). So a call that
succeeds goes out here, on our own keep-alive HTTP/1.1 pool (`_httppool`: answers parsed by httptools on the event
loop; aiohttp alone cost 0.1 s of start-up), with the SDK transport's limits and trust, and the headers the SDK's
public path sends (the key, the API version, the `x-stainless-*` platform headers; a test compares them with the public path's, header by header). Their version strings are
read from the SDK's own source files, which is cheap and stays right when the SDK is upgraded.

A failed call needs no SDK either: an error status comes out as a `StatusAnswer` and a network error as the
pool's `NetworkError` (named after httpx2's `ConnectError`, `ReadError`, `RemoteProtocolError`; the deadline
as TimeoutError), which `_http.classify_sdk_error` reads as it reads the SDK's errors for the same answer (the
kind, the status, Retry-After and the words are the same; importing the SDK to build its error made the
first error of a run a second or two late). Streaming uses the SDK client. When anything in the environment
could change what the SDK would send (its own variables, proxies) or the base URL is unusual, the provider
takes the SDK path from the start (`wire_spec` answers None).
"""

from __future__ import annotations

__all__ = ["WirePost", "wire_spec"]

import asyncio
import os
import platform
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from simulator.inflate import ACCEPT_ENCODING
from simulator.providers._answer import unanswered, unreadable
from simulator.providers._http import StatusAnswer
from simulator.providers._httppool import HttpPool
from simulator.providers._sdkpost import (
    _capped,
    _rate_limit_headers,
    dumps_json,
    loads_json,
)

# Proxies change where the SDKs' HTTP clients send (trust_env): any of them set, the SDK path is taken.
# (The certificate variables are read the SDK's way: `create_ssl_context` below is its HTTP client's.)
_HTTP_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
# What the SDKs' `DefaultAioHttpClient` gives its transport (DEFAULT_CONNECTION_LIMITS).
_MAX_CONNECTIONS = 1000
_KEEPALIVE_S = 5.0


@dataclass(frozen=True)
class WireSpec:
    """One SDK's request: its URL, its headers, its session's limits."""

    sdk: str
    url: str
    path: str  # the API's own part of `url` (/chat/completions, /v1/messages)
    headers: Mapping[str, str]
    timeout_s: float


@cache
def _source_constant(package: str, module: str, name: str) -> str | None:
    """A string constant from one of the SDK's source files, read as text (importing it would import the SDK)."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / f"{module}.py"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(rf'^{name}\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else None


@cache
def _platform_headers(version: str) -> dict[str, str]:
    """The SDKs' `platform_headers` (`_base_client.py`), computed the same way."""
    system, name, machine = platform.system().lower(), platform.platform().lower(), platform.machine().lower()
    if "iphone" in name or "ipad" in name:
        os_name = "iOS"
    elif system in ("darwin", "windows", "freebsd", "openbsd"):
        os_name = {"darwin": "MacOS", "windows": "Windows", "freebsd": "FreeBSD", "openbsd": "OpenBSD"}[
            system
        ]
    elif "android" in name:
        os_name = "Android"
    elif system == "linux":
        try:
            distro = platform.freedesktop_os_release().get("ID", "").lower()
        except OSError:
            distro = ""
        os_name = {"freebsd": "FreeBSD", "openbsd": "OpenBSD"}.get(distro, "Linux")
    else:
        os_name = f"other:{name}" if name else "Unknown"
    if machine in ("arm64", "aarch64"):
        arch = "arm64"
    elif machine in ("arm", "x86_64"):
        arch = {"arm": "arm", "x86_64": "x64"}[machine]
    elif sys.maxsize <= 2**32:
        arch = "x32"
    else:
        arch = f"other:{machine}" if machine else "unknown"
    return {
        "x-stainless-lang": "python",
        "x-stainless-package-version": version,
        "x-stainless-os": os_name,
        "x-stainless-arch": arch,
        "x-stainless-runtime": platform.python_implementation(),
        "x-stainless-runtime-version": platform.python_version(),
    }


def wire_spec(
    sdk: str, *, api_key: str, base_url: str | None, path: str, timeout_s: float
) -> WireSpec | None:
    """The request the `sdk` ("openai" or "anthropic") client would send, or None when only the SDK can say."""
    prefix = sdk.upper() + "_"
    if any(k.startswith(prefix) and k != prefix + "API_KEY" for k in os.environ) or any(
        os.environ.get(k) or os.environ.get(k.lower()) for k in _HTTP_ENV
    ):
        return None
    version = _source_constant(sdk, "_version", "__version__")
    if version is None or (base_url is not None and not re.fullmatch(r"https?://[^?#\s@]+", base_url)):
        return None
    timeout = str(float(timeout_s))
    headers = {
        "connection": "keep-alive",  # the SDK's HTTP client's defaults
        "accept": "application/json",
        "content-type": "application/json",
        "authorization": f"Bearer {api_key}",
        "user-agent": f"Async{'OpenAI' if sdk == 'openai' else 'Anthropic'}/Python {version}",
        **_platform_headers(version),
        "x-stainless-async": "async:asyncio",
        "x-stainless-retry-count": "0",
        "x-stainless-read-timeout": timeout,
    }
    if sdk == "anthropic":
        api_version = _source_constant(sdk, "_constants", "ANTHROPIC_API_VERSION")
        if api_version is None:
            return None
        headers |= {"anthropic-version": api_version, "x-stainless-timeout": timeout}
        default = "https://api.anthropic.com"
    else:
        default = "https://api.openai.com/v1"
    url = (base_url or default).rstrip("/") + path
    return WireSpec(sdk=sdk, url=url, path=path, headers=headers, timeout_s=float(timeout_s))


class WirePost:
    """`await post(payload)` -> (JSON body, rate-limit headers), as `SdkPost`, without the SDK: a failure
    raises the pool's `NetworkError`, a `StatusAnswer`, a TimeoutError or a classified ProviderError."""

    def __init__(self, spec: WireSpec) -> None:
        self._spec = spec
        self._pool = HttpPool(
            spec.url,
            {**spec.headers, "Accept-Encoding": ACCEPT_ENCODING},
            limit=_MAX_CONNECTIONS,
            keepalive_s=_KEEPALIVE_S,
            ssl_context=_sdk_ssl_context,
            capped=_capped,
        )

    async def __call__(self, payload: dict[str, Any]) -> tuple[Any, Mapping[str, str]]:
        async with asyncio.timeout(self._spec.timeout_s):  # the whole call's deadline, as SdkPost's
            status, raw_headers, body = await self._pool.post(dumps_json(payload))
        if 200 <= status < 300:
            try:
                answer = loads_json(body)
            except ValueError as exc:
                raise unreadable(self._spec.url, status, raw_headers, body, str(exc)) from None
            return answer, _rate_limit_headers(raw_headers)
        if status < 400:  # a redirect, or a status below 200: neither an answer nor an error
            raise unanswered(self._spec.url, self._spec.path, status, raw_headers)
        raise StatusAnswer(status, raw_headers, body)

    async def aclose(self) -> None:
        """Close the connections."""
        self._pool.close()


def _sdk_ssl_context() -> Any:
    """The certificates the SDK's transport trusts (its HTTP client's `create_ssl_context`: certifi, and
    SSL_CERT_FILE / SSL_CERT_DIR as it reads them)."""
    from simulator.tls import shared_ssl_context

    return shared_ssl_context("httpx2")
