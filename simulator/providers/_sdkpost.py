"""POST a plain JSON body through an official SDK client's lower-level request path, and read the JSON once.

The SDKs' `create(...)` walks the typed params, deep-copies its request options, builds a request model per
call and a typed response model per answer: on the bench that was most of the engine's CPU per call. Our
payloads are already plain JSON and we read the answer as a dict, so this sends it with the SDK's own HTTP
client (its vendored aiohttp transport, timeouts and connection pool), the SDK's own headers (auth,
version, platform, built once by the SDK for this path) and raises the SDK's own error classes for a 4xx or
5xx (so retry classification and Retry-After are unchanged). The answer's headers come back too: they carry
the provider's rate-limit budget.

An SDK version without these lower-level pieces falls back to its public `client.post(...)`.
"""

from __future__ import annotations

__all__ = ["SdkPost"]

import json
from collections.abc import Mapping
from typing import Any

_EMPTY: Mapping[str, str] = {}


class SdkPost:
    """`await post(payload)` -> (the JSON body as a dict or whatever it decoded to, its rate-limit headers)."""

    def __init__(self, sdk: Any, client: Any, path: str) -> None:
        self._client = client
        self._path = path
        self._fast = False
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
            self._request = type(template)
            self._url = template.url
            self._headers = template.headers
            self._extensions = template.extensions
            self._status_error = client._make_status_error_from_response
            self._fast = True
        except (AttributeError, TypeError):  # an SDK without these internals: its public path
            pass

    async def __call__(self, payload: dict[str, Any]) -> tuple[Any, Mapping[str, str]]:
        if not self._fast:
            return await self._client.post(self._path, body=payload, cast_to=dict), _EMPTY
        request = self._request(
            "POST",
            self._url,
            headers=self._headers,
            content=json.dumps(payload).encode(),
            extensions=self._extensions,
        )
        response = await self._http.send(request)
        if response.status_code >= 400:
            raise self._status_error(response)
        return json.loads(response.content), _rate_limit_headers(response.headers.raw)


def _rate_limit_headers(raw: list[tuple[bytes, bytes]]) -> Mapping[str, str]:
    """The rate-limit headers only, names lower-cased: one pass over the raw bytes instead of a lookup
    per header name (each lookup in the HTTP client's header object decodes and scans every header)."""
    found: dict[str, str] = {}
    for name, value in raw:
        if b"ratelimit" in name.lower():
            found[name.decode("latin-1").lower()] = value.decode("latin-1")
    return found or _EMPTY
