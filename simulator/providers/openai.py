"""OpenAI Chat Completions provider: OpenAI itself or any compatible server (vLLM, Ollama, llama.cpp)."""

from __future__ import annotations

__all__ = ["OpenAIProvider", "wire_message"]

import json
import os
from typing import Any, ClassVar, Literal

from simulator.config.providers import ProviderSettings
from simulator.errors import UserError
from simulator.providers._schema import cap_string_lengths, with_schema
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

# How a server accepts a JSON schema, tried in this order; a refusal moves to the next one.
# json_schema: OpenAI structured outputs. json_object: JSON mode plus the schema in a `schema` key, which
# llama-cpp-python's server turns into a grammar (others ignore it). json_object_plain: JSON mode only,
# for servers that reject the extra key. text: no response_format; the JSON is found in the reply.
SchemaMode = Literal["json_schema", "json_object", "json_object_plain", "text"]
_MODES: tuple[SchemaMode, ...] = ("json_schema", "json_object", "json_object_plain", "text")


class OpenAIProvider(SdkProvider):
    name = "openai"
    warm_prompt_cache = False  # caching is automatic (long prefixes only), never written on request
    # What worked per base URL, remembered for the life of the process.
    schema_modes: ClassVar[dict[str, SchemaMode]] = {}

    def __init__(self, settings: ProviderSettings) -> None:
        key_env = settings.api_key_env or "OPENAI_API_KEY"
        api_key = os.environ.get(key_env)
        if not api_key:
            if settings.base_url is None:
                raise UserError(f"set the {key_env} environment variable to use openai: models")
            api_key = "not-needed"  # local OpenAI-compatible servers usually ignore the key
        base_url = (settings.base_url or "https://api.openai.com/v1").rstrip("/")
        self._connect(
            "openai", "AsyncOpenAI", settings, api_key=api_key, key_env=key_env, base_url=base_url,
            path="/chat/completions",
        )  # fmt: skip

    def _payload(self, request: ModelRequest, mode: SchemaMode | None) -> dict[str, Any]:
        system = request.system or ""
        if request.output_schema is not None and mode != "json_schema":
            # JSON mode alone does not tell the model the fields (and OpenAI requires the word JSON in
            # the messages when it is on); in text mode this instruction is all there is.
            system = with_schema(system, request.output_schema, "Answer with one JSON object only, no prose,")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages += [wire_message(m) for m in request.messages]
        payload: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
        if request.output_schema is not None and mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.output_schema},
            }
        elif request.output_schema is not None and mode == "json_object":
            # Only grammar-building servers (llama.cpp) read this key: bound free text so the JSON closes.
            payload["response_format"] = {
                "type": "json_object",
                "schema": cap_string_lengths(request.output_schema),
            }
        elif request.output_schema is not None and mode == "json_object_plain":
            payload["response_format"] = {"type": "json_object"}
        return payload

    async def generate(self, request: ModelRequest) -> ModelResponse:
        if request.output_schema is None:
            return await self._call(request, None)
        start = _MODES.index(self.schema_modes.get(self._base_url, "json_schema"))
        for mode in _MODES[start:]:
            try:
                response = await self._call(request, mode)
            except ProviderError as exc:
                if mode != "text" and _is_format_refusal(exc):
                    continue  # this server does not take that response_format: degrade, do not retry
                raise
            self.schema_modes[self._base_url] = mode
            return response
        raise ProviderError("permanent", "the server refused every structured-output mode")

    async def _call(self, request: ModelRequest, mode: SchemaMode | None) -> ModelResponse:
        payload = self._payload(request, mode)
        if request.stream:
            return await self._stream(request, payload, mode)
        watch = Stopwatch()
        try:
            # A plain body and a dict back: the SDK's transport, auth and error classes, without its per-call
            # walk of typed params and models (most of its CPU cost; our payload is plain JSON).
            completion, headers = await self._post(payload)
        except Exception as exc:
            error = self._classify(exc)
            if mode not in (None, "text") and _is_format_refusal(error):
                error.kind = "permanent"  # a refusal is an answer, not a hiccup: never retried as is
            raise error from exc
        latency = watch.elapsed()
        if not isinstance(completion, dict):
            raise ProviderError("transient", f"the response was not a JSON object: {str(completion)[:200]!r}")
        choices = completion.get("choices") or []
        if not choices:
            raise ProviderError("transient", "the response had no choices")
        message = choices[0].get("message") or {}
        text = message.get("content") or ""
        tool_calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function")
            if not function:
                continue
            tool_calls.append(
                ToolCall.from_json(function.get("name", ""), function.get("arguments"), call.get("id"))
            )
        usage = completion.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        tokens = (usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, cached)
        return self._response(
            request, text, tool_calls, tokens, headers,
            latency_s=latency,
            model=completion.get("model") or request.model,
            raw={"request": payload, "response": completion, "schema_mode": mode},
        )  # fmt: skip

    async def _stream(
        self, request: ModelRequest, payload: dict[str, Any], mode: SchemaMode | None
    ) -> ModelResponse:
        """The same call streamed: text and tool-call fragments are joined; the first one's time is kept."""
        watch = Stopwatch()
        first: float | None = None
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: Any = None
        model = request.model
        try:
            stream = await self._client.chat.completions.create(
                **payload, stream=True, stream_options={"include_usage": True}
            )
            async for chunk in stream:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        first = watch.elapsed() if first is None else first
                        text.append(delta.content)
                    for call in delta.tool_calls or []:
                        first = watch.elapsed() if first is None else first
                        entry = calls.setdefault(call.index, {"name": "", "arguments": "", "id": ""})
                        entry["id"] = entry["id"] or call.id or ""
                        if call.function is not None:
                            entry["name"] += call.function.name or ""
                            entry["arguments"] += call.function.arguments or ""
        except Exception as exc:
            raise self._classify(exc) from exc
        tool_calls = [
            ToolCall.from_json(entry["name"], entry["arguments"], entry["id"] or None)
            for _, entry in sorted(calls.items())
        ]
        joined = "".join(text)
        details = getattr(usage, "prompt_tokens_details", None)
        return ModelResponse(
            text=joined,
            parsed=json_object_in(joined) if request.output_schema is not None else None,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                output_tokens=getattr(usage, "completion_tokens", 0) or 0,
                cached_input_tokens=(getattr(details, "cached_tokens", 0) or 0) if details else 0,
                calls=1,
            ),
            latency_s=watch.elapsed(),
            time_to_first_token_s=first,
            model=model,
            raw={"request": {**payload, "stream": True}, "response": {"text": joined}, "schema_mode": mode},
        )


def wire_message(message: ChatMessage) -> dict[str, Any]:
    """One message in Chat Completions form: a model's tool calls on its assistant message (arguments as
    JSON text), each result as a `tool` message naming the call's id."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _is_format_refusal(exc: ProviderError) -> bool:
    """A server saying it does not support this response_format (llama.cpp answers 500, others 400)."""
    text = str(exc).lower()
    return exc.status in (400, 422, 500) and ("response_format" in text or "json_schema" in text)
