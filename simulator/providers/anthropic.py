"""Anthropic Messages API provider (also any server speaking its wire format, via base_url)."""

from __future__ import annotations

__all__ = ["AnthropicProvider"]

import json
import os
from typing import Any

from simulator.errors import UserError
from simulator.providers._timing import Stopwatch
from simulator.providers.base import ModelRequest, ModelResponse, Provider, ProviderError, ToolCall
from simulator.suite import ProviderSettings
from simulator.transcript import Usage


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(self, settings: ProviderSettings) -> None:
        import anthropic

        key_env = settings.api_key_env or "ANTHROPIC_API_KEY"
        api_key = os.environ.get(key_env)
        if not api_key:
            raise UserError(f"set the {key_env} environment variable to use anthropic: models")
        self._sdk = anthropic
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=settings.base_url, max_retries=0, timeout=settings.timeout_s
        )

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        for index, message in enumerate(request.messages):
            block: dict[str, Any] = {"type": "text", "text": message.content}
            if request.cacheable_prefix_messages and index == request.cacheable_prefix_messages - 1:
                # Mark the end of the shared prefix (e.g. judge instructions + transcript) cacheable.
                block["cache_control"] = {"type": "ephemeral"}
            if messages and messages[-1]["role"] == message.role:
                # Consecutive messages of one role form one turn: send them as blocks of one message,
                # so a cache breakpoint can fall between them (the judge's transcript, then its criterion).
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": message.role, "content": [block]})
        for turn in messages:
            blocks = turn["content"]
            if len(blocks) == 1 and "cache_control" not in blocks[0]:
                turn["content"] = blocks[0]["text"]  # a plain string when there is nothing to mark
        payload: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if request.system:
            payload["system"] = request.system
        if request.tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if request.output_schema is not None:
            payload["output_config"] = {"format": {"type": "json_schema", "schema": request.output_schema}}
        return payload

    async def generate(self, request: ModelRequest) -> ModelResponse:
        payload = self._payload(request)
        extra_body = {"temperature": request.temperature} if request.temperature is not None else None
        watch = Stopwatch()
        try:
            response = await self._client.messages.create(**payload, extra_body=extra_body)
        except Exception as exc:
            raise self._classify(exc) from exc
        latency = watch.elapsed()
        text = "".join(block.text for block in response.content if block.type == "text")
        tool_calls = [
            ToolCall(name=block.name, arguments=dict(block.input))
            for block in response.content
            if block.type == "tool_use"
        ]
        usage = response.usage
        cached = getattr(usage, "cache_read_input_tokens", None) or 0
        created = getattr(usage, "cache_creation_input_tokens", None) or 0
        parsed = _parse_json(text) if request.output_schema is not None else None
        return ModelResponse(
            text=text,
            parsed=parsed,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=usage.input_tokens + cached + created,
                output_tokens=usage.output_tokens,
                cached_input_tokens=cached,
                calls=1,
            ),
            latency_s=latency,
            model=response.model,
            raw={
                "request": {**payload, "temperature": request.temperature},
                "response": response.model_dump(),
            },
        )

    def _classify(self, exc: Exception) -> ProviderError:
        sdk = self._sdk
        if isinstance(exc, sdk.RateLimitError):
            return ProviderError("rate_limit", str(exc), retry_after=_retry_after(exc), status=429)
        if isinstance(exc, sdk.AuthenticationError):
            return ProviderError(
                "permanent", "Anthropic rejected the API key (401); check ANTHROPIC_API_KEY", status=401
            )
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            if status >= 500 or status in (408, 409, 529):
                return ProviderError("transient", str(exc), retry_after=_retry_after(exc), status=status)
            return ProviderError("permanent", f"Anthropic answered {status}: {exc.message}", status=status)
        if isinstance(exc, (sdk.APITimeoutError, sdk.APIConnectionError)):
            return ProviderError("transient", f"{type(exc).__name__}: {exc}")
        if isinstance(exc, sdk.APIResponseValidationError):
            return ProviderError("transient", f"invalid response body: {exc}")
        return ProviderError("transient", f"{type(exc).__name__}: {exc}")


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _parse_json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
