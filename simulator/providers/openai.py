"""OpenAI Chat Completions provider: OpenAI itself or any compatible server (vLLM, Ollama, llama.cpp)."""

from __future__ import annotations

__all__ = ["OpenAIProvider", "wire_message"]

import json
import os
from typing import Any, ClassVar, Literal

from simulator.config.providers import ProviderSettings
from simulator.errors import UserError
from simulator.providers._answer import usage_counts
from simulator.providers._schema import cap_string_lengths, with_schema
from simulator.providers._sdkbase import SdkProvider
from simulator.providers._sdkpost import STREAM_HEADERS, answer_pieces
from simulator.providers._sse import (
    in_stream_error,
    read_json,
    sse_events,
    stream_fault,
    stream_tokens,
    unfinished,
)
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
# The token counts of an answer's `usage`: input, output, cached input.
_COUNTS = ("prompt_tokens", "completion_tokens", "prompt_tokens_details.cached_tokens")


class OpenAIProvider(SdkProvider):
    name = "openai"
    key_env: ClassVar[str] = "OPENAI_API_KEY"
    warm_prompt_cache = False  # caching is automatic (long prefixes only), never written on request
    # What worked per base URL, remembered for the life of the process.
    schema_modes: ClassVar[dict[str, SchemaMode]] = {}

    def __init__(self, settings: ProviderSettings) -> None:
        key_env = settings.api_key_env or self.key_env
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
        try:
            return self._read(request, completion, headers, latency, payload, mode)
        except (TypeError, AttributeError, LookupError, ValueError) as exc:  # not this API's shape
            raise self._not_an_answer(completion, "a Chat Completions answer", exc) from exc

    def _read(
        self, request: ModelRequest, completion: Any, headers: Any, latency: float, payload: dict[str, Any],
        mode: SchemaMode | None,
    ) -> ModelResponse:  # fmt: skip
        """The answer from its JSON; a shape other than the API's raises (TypeError, KeyError, ...)."""
        message = completion["choices"][0].get("message") or {}
        text = message.get("content") or ""
        tool_calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function")
            if not function:
                continue
            name, arguments = function.get("name", ""), function.get("arguments")
            tool_calls.append(
                ToolCall(name=name, arguments=arguments, id=call.get("id"))
                if isinstance(arguments, dict)  # some servers send the arguments as an object, not its text
                else ToolCall.from_json(name, arguments, call.get("id"))
            )
        prompt, output, cached = usage_counts(completion.get("usage"), _COUNTS)
        return self._response(
            request, text, tool_calls, (prompt, output, cached), headers,
            latency_s=latency,
            model=completion.get("model") or request.model,
            raw={"request": payload, "response": completion, "schema_mode": mode},
        )  # fmt: skip

    async def _stream(
        self, request: ModelRequest, payload: dict[str, Any], mode: SchemaMode | None
    ) -> ModelResponse:
        """The same call streamed: text and tool-call fragments are joined; the first one's time is kept. The
        answer counts only when a chunk gave its `finish_reason`: a stream that ends before (the body ends,
        or `[DONE]` comes early) may have cut the answer short, and is an error (`_sse`)."""
        watch = Stopwatch()
        joined = _JoinedCompletion(request.model)
        how, cut = "at the end of the HTTP body", False
        try:
            async with self._client.chat.completions.with_streaming_response.create(
                **payload, stream=True, stream_options={"include_usage": True}, extra_headers=STREAM_HEADERS
            ) as answer:
                async for event in sse_events(answer_pieces(answer.http_response), self._base_url):
                    if event.data.startswith("[DONE]"):
                        how = "with data: [DONE]"
                        break  # what follows is not read, as the SDK does
                    if not event.whole:
                        cut = True
                        break
                    joined.add(
                        read_json(event.data, self._base_url, joined.events + 1), self._base_url, watch
                    )
        except Exception as exc:
            raise self._classify(exc) from exc
        if joined.finish is None:
            raise unfinished(
                self._base_url, "a finish_reason (set on the last chunk of a whole answer)",
                events=joined.events, chars=len(joined.text), how=how, cut=cut,
            )  # fmt: skip
        return joined.response(request, payload, mode, watch)


class _JoinedCompletion:
    """A streamed completion as its chunks arrive (plain dicts, as the non-streamed path reads them)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.events = 0
        self.first: float | None = None
        self.parts: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.tokens = (0, 0, 0)  # input, output, cached input: the last chunk that gave a usage says them
        self.finish: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, chunk: dict[str, Any], who: str, watch: Stopwatch) -> None:
        self.events += 1
        if chunk.get("error"):
            raise in_stream_error(chunk, who)
        self.model = str(chunk.get("model") or self.model)
        usage = chunk.get("usage")
        if usage is not None:
            prompt, output, cached = stream_tokens(usage, _COUNTS, who)
            self.tokens = (prompt, output, cached)
        choices = chunk.get("choices") or []
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise stream_fault(
                who, f"has a chunk whose choices are not a list of objects: {str(chunk)[:200]!r}"
            )
        for choice in choices:
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if content:
                self.first = watch.elapsed() if self.first is None else self.first
                self.parts.append(str(content))
            for call in (delta.get("tool_calls") if isinstance(delta, dict) else None) or []:
                if not isinstance(call, dict):
                    raise stream_fault(who, f"has a tool call that is not an object: {str(call)[:200]!r}")
                self.first = watch.elapsed() if self.first is None else self.first
                entry = self.calls.setdefault(call.get("index", 0), {"name": "", "arguments": "", "id": ""})
                entry["id"] = entry["id"] or call.get("id") or ""
                function = call.get("function") or {}
                entry["name"] += function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def response(
        self, request: ModelRequest, payload: dict[str, Any], mode: SchemaMode | None, watch: Stopwatch
    ) -> ModelResponse:
        tool_calls = [
            ToolCall.from_json(entry["name"], entry["arguments"], entry["id"] or None)
            for _, entry in sorted(self.calls.items())
        ]
        text, tokens = self.text, self.tokens
        return ModelResponse(
            text=text,
            parsed=json_object_in(text) if request.output_schema is not None else None,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=tokens[0], output_tokens=tokens[1], cached_input_tokens=tokens[2], calls=1
            ),
            latency_s=watch.elapsed(),
            time_to_first_token_s=self.first,
            model=self.model,
            raw={
                "request": {**payload, "stream": True},
                "response": {"text": text, "finish_reason": self.finish},
                "schema_mode": mode,
            },
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
