"""What the anthropic and openai providers share: an SDK client on the shared aiohttp transport, the raw
POST beside it, closing it, and classifying the SDK's exceptions (the two SDKs share one hierarchy)."""

from __future__ import annotations

__all__ = ["SdkProvider"]

from collections.abc import Mapping
from typing import Any, ClassVar

from simulator.config.providers import ProviderSettings
from simulator.providers._http import aiohttp_client, classify_sdk_error
from simulator.providers._sdkpost import SdkPost
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
        self, sdk: Any, client_class: Any, settings: ProviderSettings, *, api_key: str, key_env: str, base_url: str,
        path: str,
    ) -> None:  # fmt: skip
        """The SDK client (no SDK retries: retries live in one place), and the raw POST on its transport."""
        self._sdk, self._key_env, self._base_url, self._timeout_s = sdk, key_env, base_url, settings.timeout_s
        self._client = client_class(
            api_key=api_key,
            base_url=settings.base_url,
            max_retries=0,
            timeout=settings.timeout_s,
            http_client=aiohttp_client(sdk, settings.timeout_s),
        )
        self._post = SdkPost(sdk, self._client, path)

    async def aclose(self) -> None:
        """Close the SDK client's connections (its aiohttp session warns if left open)."""
        await self._client.close()

    def _classify(self, exc: Exception) -> ProviderError:
        return classify_sdk_error(
            self._sdk,
            exc,
            who=self.who,
            key_env=self._key_env,
            transient_statuses=self.transient_statuses,
            where=self._base_url,
            timeout_s=self._timeout_s,
        )

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
