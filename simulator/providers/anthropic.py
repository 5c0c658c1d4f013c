"""Anthropic Messages API provider (also any server speaking its wire format, via base_url)."""

from __future__ import annotations

__all__ = ["AnthropicProvider"]

import os
from typing import Any

from simulator.config.providers import ProviderSettings
from simulator.errors import UserError
from simulator.providers._sdkbase import SdkProvider
from simulator.providers._timing import Stopwatch
from simulator.providers.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ToolCall,
    json_object_in,
)
from simulator.record.transcript import Usage


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    """One message as Messages API content blocks: text; a model's `tool_use` blocks after its text; a
    tool result as a `tool_result` block naming the `tool_use` it answers."""
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        blocks.append({"type": "text", "text": message.content})
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    ]
    return blocks


class AnthropicProvider(SdkProvider):
    name = "anthropic"
    who = "Anthropic"
    transient_statuses = (408, 409, 529)
    warm_prompt_cache = True  # explicit cache writes: the first criterion's call writes the prefix

    def __init__(self, settings: ProviderSettings) -> None:
        key_env = settings.api_key_env or "ANTHROPIC_API_KEY"
        api_key = os.environ.get(key_env)
        if not api_key:
            raise UserError(f"set the {key_env} environment variable to use anthropic: models")
        base_url = settings.base_url or "https://api.anthropic.com"
        self._connect(
            "anthropic", "AsyncAnthropic", settings, api_key=api_key, key_env=key_env, base_url=base_url,
            path="/v1/messages",
        )  # fmt: skip

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        for index, message in enumerate(request.messages):
            blocks = _blocks(message)
            if request.cacheable_prefix_messages and index == request.cacheable_prefix_messages - 1:
                # Mark the end of the shared prefix (e.g. judge instructions + transcript) cacheable.
                blocks[-1]["cache_control"] = {"type": "ephemeral"}
            role = "user" if message.role == "tool" else message.role  # tool results go in a user turn
            if messages and messages[-1]["role"] == role:
                # Consecutive messages of one role form one turn: send them as blocks of one message,
                # so a cache breakpoint can fall between them (the judge's transcript, then its criterion).
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": role, "content": blocks})
        for turn in messages:
            blocks = turn["content"]
            if len(blocks) == 1 and blocks[0]["type"] == "text" and "cache_control" not in blocks[0]:
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
        if request.stream:
            return await self._stream(request, payload, extra_body)
        if extra_body:
            payload = {**payload, **extra_body}
        watch = Stopwatch()
        try:
            # A plain body and a dict back (see _sdkpost): the SDK's transport, headers and errors, without
            # its typed params and response models.
            message, headers = await self._post(payload)
        except Exception as exc:
            raise self._classify(exc) from exc
        latency = watch.elapsed()
        if not isinstance(message, dict):
            raise ProviderError("transient", f"the response was not a JSON object: {str(message)[:200]!r}")
        content = message.get("content") or []
        text = "".join(block.get("text") or "" for block in content if block.get("type") == "text")
        tool_calls = [
            ToolCall(name=block.get("name", ""), arguments=dict(block.get("input") or {}), id=block.get("id"))
            for block in content
            if block.get("type") == "tool_use"
        ]
        usage = message.get("usage") or {}
        cached = usage.get("cache_read_input_tokens") or 0
        created = usage.get("cache_creation_input_tokens") or 0
        tokens = (
            (usage.get("input_tokens") or 0) + cached + created,
            usage.get("output_tokens") or 0,
            cached,
        )
        return self._response(
            request, text, tool_calls, tokens, headers,
            latency_s=latency,
            model=message.get("model") or request.model,
            raw={"request": {**payload, "temperature": request.temperature}, "response": message},
        )  # fmt: skip

    async def _stream(
        self, request: ModelRequest, payload: dict[str, Any], extra_body: dict[str, Any] | None
    ) -> ModelResponse:
        """The same call streamed as server-sent events; the first text or tool delta's time is kept."""
        watch = Stopwatch()
        first: float | None = None
        text: list[str] = []
        tools: dict[int, dict[str, str]] = {}
        input_tokens = output_tokens = cached = created = 0
        model = request.model
        try:
            stream = await self._client.messages.create(**payload, stream=True, extra_body=extra_body)
            async for event in stream:
                if event.type == "message_start":
                    model = event.message.model or model
                    start_usage = event.message.usage
                    input_tokens = start_usage.input_tokens or 0
                    cached = getattr(start_usage, "cache_read_input_tokens", None) or 0
                    created = getattr(start_usage, "cache_creation_input_tokens", None) or 0
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    tools[event.index] = {"name": block.name, "json": "", "id": block.id}
                elif event.type == "content_block_delta":
                    first = watch.elapsed() if first is None else first
                    if event.delta.type == "text_delta":
                        text.append(event.delta.text)
                    elif event.delta.type == "input_json_delta" and event.index in tools:
                        tools[event.index]["json"] += event.delta.partial_json
                elif event.type == "message_delta":
                    output_tokens = event.usage.output_tokens or output_tokens
        except Exception as exc:
            raise self._classify(exc) from exc
        joined = "".join(text)
        tool_calls = [
            ToolCall.from_json(tool["name"], tool["json"], tool["id"]) for _, tool in sorted(tools.items())
        ]
        return ModelResponse(
            text=joined,
            parsed=json_object_in(joined) if request.output_schema is not None else None,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=input_tokens + cached + created,
                output_tokens=output_tokens,
                cached_input_tokens=cached,
                calls=1,
            ),
            latency_s=watch.elapsed(),
            time_to_first_token_s=first,
            model=model,
            raw={"request": {**payload, "stream": True}, "response": {"text": joined}},
        )
