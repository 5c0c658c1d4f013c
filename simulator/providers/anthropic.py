"""Anthropic Messages API provider (also any server speaking its wire format, via base_url)."""

from __future__ import annotations

__all__ = ["AnthropicProvider"]

import os
from typing import Any, ClassVar

from simulator.config.providers import ProviderSettings
from simulator.errors import UserError
from simulator.providers._answer import usage_counts
from simulator.providers._sdkbase import SdkProvider
from simulator.providers._sdkpost import STREAM_HEADERS, answer_pieces
from simulator.providers._sse import in_stream_error, read_json, sse_events, stream_tokens, unfinished
from simulator.providers._timing import Stopwatch
from simulator.providers.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    ToolCall,
    json_object_in,
)
from simulator.record.transcript import Usage

# The token counts of an answer's `usage` (input is the three inputs together; output is the message_delta's
# in a stream).
_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


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
    key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    who = "Anthropic"
    transient_statuses = (408, 409, 529)
    warm_prompt_cache = True  # explicit cache writes: the first criterion's call writes the prefix

    def __init__(self, settings: ProviderSettings) -> None:
        key_env = settings.api_key_env or self.key_env
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
        try:
            return self._read(request, message, headers, latency, payload)
        except (TypeError, AttributeError, LookupError, ValueError) as exc:  # not this API's shape
            raise self._not_an_answer(message, "a Messages API answer", exc) from exc

    def _read(
        self, request: ModelRequest, message: Any, headers: Any, latency: float, payload: dict[str, Any]
    ) -> ModelResponse:
        """The answer from its JSON; a shape other than the API's raises (TypeError, KeyError, ...)."""
        content = message["content"]  # a list, empty when the model said nothing; absent is no answer
        text = "".join(block.get("text") or "" for block in content if block.get("type") == "text")
        tool_calls = [
            ToolCall(name=block.get("name", ""), arguments=dict(block.get("input") or {}), id=block.get("id"))
            for block in content
            if block.get("type") == "tool_use"
        ]
        fresh, output, cached, created = usage_counts(message.get("usage"), _COUNTS)
        return self._response(
            request, text, tool_calls, (fresh + cached + created, output, cached), headers,
            latency_s=latency,
            model=message.get("model") or request.model,
            raw={"request": {**payload, "temperature": request.temperature}, "response": message},
        )  # fmt: skip

    async def _stream(
        self, request: ModelRequest, payload: dict[str, Any], extra_body: dict[str, Any] | None
    ) -> ModelResponse:
        """The same call streamed as server-sent events; the first text or tool delta's time is kept. Events
        are read as the SDK reads them (`ping`, unnamed and data-less events skipped, `error` raised), and
        the answer counts only after `message_stop`: a stream that ends before may have cut it short (`_sse`)."""
        watch = Stopwatch()
        joined = _JoinedMessage(request.model)
        cut = False
        try:
            async with self._client.messages.with_streaming_response.create(
                **payload, stream=True, extra_body=extra_body, extra_headers=STREAM_HEADERS
            ) as answer:
                async for event in sse_events(answer_pieces(answer.http_response), self._base_url):
                    if not event.whole:
                        cut = True
                    elif event.event == "error":
                        raise in_stream_error(
                            read_json(event.data, self._base_url, joined.events + 1), self._base_url
                        )
                    elif event.event not in (None, "ping"):
                        data = read_json(event.data, self._base_url, joined.events + 1)
                        joined.add(event.event, data, watch, self._base_url)
        except Exception as exc:
            raise self._classify(exc) from exc
        if not joined.stopped:
            raise unfinished(
                self._base_url, "a message_stop event (the end of a whole message)",
                events=joined.events, chars=len(joined.text), how="at the end of the HTTP body", cut=cut,
            )  # fmt: skip
        return joined.response(request, payload, watch)


class _JoinedMessage:
    """A streamed message as its events arrive (plain dicts, as the non-streamed path reads them)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.events = 0
        self.first: float | None = None
        self.parts: list[str] = []
        self.tools: dict[int, dict[str, str]] = {}
        self.tokens = {"input": 0, "output": 0, "cached": 0, "created": 0}
        self.stop_reason: str | None = None
        self.stopped = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, kind: str, data: dict[str, Any], watch: Stopwatch, who: str) -> None:
        self.events += 1
        if kind == "message_start":
            message = data.get("message") or {}
            self.model = str(message.get("model") or self.model)
            fresh, _, cached, created = stream_tokens(message.get("usage"), _COUNTS, who, "message.usage")
            self.tokens.update(input=fresh, cached=cached, created=created)
        elif kind == "content_block_start" and (data.get("content_block") or {}).get("type") == "tool_use":
            block = data["content_block"]
            self.tools[data.get("index", 0)] = {
                "name": block.get("name", ""),
                "json": "",
                "id": block.get("id"),
            }
        elif kind == "content_block_delta":
            self.first = watch.elapsed() if self.first is None else self.first
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                self.parts.append(str(delta.get("text") or ""))
            elif delta.get("type") == "input_json_delta" and data.get("index") in self.tools:
                self.tools[data["index"]]["json"] += str(delta.get("partial_json") or "")
        elif kind == "message_delta":
            output = stream_tokens(data.get("usage"), _COUNTS[1:2], who)[0]
            self.tokens["output"] = output or self.tokens["output"]
            self.stop_reason = (data.get("delta") or {}).get("stop_reason") or self.stop_reason
        elif kind == "message_stop":
            self.stopped = True

    def response(self, request: ModelRequest, payload: dict[str, Any], watch: Stopwatch) -> ModelResponse:
        text, tokens = self.text, self.tokens
        tool_calls = [
            ToolCall.from_json(tool["name"], tool["json"], tool["id"])
            for _, tool in sorted(self.tools.items())
        ]
        return ModelResponse(
            text=text,
            parsed=json_object_in(text) if request.output_schema is not None else None,
            tool_calls=tool_calls,
            usage=Usage(
                input_tokens=tokens["input"] + tokens["cached"] + tokens["created"],
                output_tokens=tokens["output"],
                cached_input_tokens=tokens["cached"],
                calls=1,
            ),
            latency_s=watch.elapsed(),
            time_to_first_token_s=self.first,
            model=self.model,
            raw={
                "request": {**payload, "stream": True},
                "response": {"text": text, "stop_reason": self.stop_reason},
            },
        )
