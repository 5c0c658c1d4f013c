"""What the anthropic and openai providers share: an SDK client on the shared aiohttp transport, the raw
POST beside it, closing it, and classifying the SDK's exceptions (the two SDKs share one hierarchy)."""

from __future__ import annotations

__all__ = ["SdkProvider"]

import importlib
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from simulator.config.providers import ProviderSettings
from simulator.providers._answer import BadCount, malformed
from simulator.providers._http import aiohttp_client, classify_sdk_error
from simulator.providers._sdkpost import SdkPost
from simulator.providers._sse import in_stream_error
from simulator.providers._wire import WirePost, wire_spec
from simulator.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    ToolCall,
    json_object_in,
)
from simulator.providers.ratelimits import rate_limits_from_headers
from simulator.record.transcript import Usage


class SdkProvider(Provider):
    """A provider behind an official SDK; `who` names the other side in errors."""

    who: ClassVar[str] = "the server"
    transient_statuses: ClassVar[tuple[int, ...]] = (408, 409)

    def _connect(
        self, sdk: str, client_class: str, settings: ProviderSettings, *, api_key: str, key_env: str, base_url: str,
        path: str,
    ) -> None:  # fmt: skip
        """The raw POST: without the SDK when `_wire` can build its request (the SDK is imported for a stream
        only), else on the SDK client (no SDK retries: retries live in one place)."""
        self._sdk_name, self._client_class, self._settings, self._api_key = (
            sdk,
            client_class,
            settings,
            api_key,
        )
        self._key_env, self._base_url, self._timeout_s, self._path = (
            key_env,
            base_url,
            settings.timeout_s,
            path,
        )
        self._sdk_client: Any = None
        self._sdk_post: SdkPost | None = None
        spec = wire_spec(
            sdk, api_key=api_key, base_url=settings.base_url, path=path, timeout_s=settings.timeout_s
        )
        self._post: WirePost | SdkPost = WirePost(spec) if spec else self._sdk_posting()

    @property
    def _sdk(self) -> Any:
        """The SDK module, imported when first needed."""
        return importlib.import_module(self._sdk_name)

    @property
    def _client(self) -> Any:
        """The SDK client, built when first needed (a stream, an error, a test's public call)."""
        if self._sdk_client is None:
            sdk = self._sdk
            self._sdk_client = getattr(sdk, self._client_class)(
                api_key=self._api_key,
                base_url=self._settings.base_url,
                max_retries=0,
                timeout=self._timeout_s,
                http_client=aiohttp_client(sdk, self._timeout_s),
            )
        return self._sdk_client

    def _sdk_posting(self) -> SdkPost:
        """The POST on the SDK client's own transport (`_sdkpost`)."""
        if self._sdk_post is None:
            self._sdk_post = SdkPost(self._sdk, self._client, self._path)
        return self._sdk_post

    async def aclose(self) -> None:
        """Close the connections (the SDK client's aiohttp session warns if left open)."""
        if isinstance(self._post, WirePost):
            await self._post.aclose()
        if self._sdk_client is not None:
            await self._sdk_client.close()

    def _classify(self, exc: Exception) -> ProviderError:
        if isinstance(exc, ProviderError):  # already classified (an answer past its byte cap)
            return exc
        # The SDK as far as it is imported: an error can be of its classes only once it is (the wire path's
        # errors are the pool's own, classified without it).
        return classify_sdk_error(
            sys.modules.get(self._sdk_name),
            exc,
            who=self.who,
            key_env=self._key_env,
            transient_statuses=self.transient_statuses,
            where=self._base_url,
            timeout_s=self._timeout_s,
        )

    def _not_an_answer(self, answer: Any, api: str, exc: Exception) -> ProviderError:
        """A 2xx's JSON that is not `api`'s answer (`exc`: what reading it raised): the error it carries in
        its place (some servers and proxies answer 200 with `{"error": ...}`), classified by its type; else
        what came, in words (a token count that is not one, by its field)."""
        url = self._base_url.rstrip("/") + self._path
        if isinstance(answer, dict) and answer.get("error"):
            return in_stream_error(answer, url, where="in place of an answer (200)")
        return malformed(url, api, answer, str(exc) if isinstance(exc, BadCount) else None)

    @staticmethod
    def _response(
        request: ModelRequest, text: str, tool_calls: list[ToolCall], tokens: tuple[int, int, int],
        headers: Mapping[str, str] | None, **rest: Any,
    ) -> ModelResponse:  # fmt: skip
        """One answer in the provider-neutral form: `tokens` are (input, output, cached input), the JSON
        object parsed when a schema was asked for, the rate-limit headers read."""
        return ModelResponse(
            text=text,
            parsed=json_object_in(text) if request.output_schema is not None else None,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=tokens[0], output_tokens=tokens[1], cached_input_tokens=tokens[2], calls=1
            ),
            rate_limits=rate_limits_from_headers(headers) if headers else None,
            **rest,
        )
