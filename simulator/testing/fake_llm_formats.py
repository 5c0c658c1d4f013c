"""Wire formats of the fake LLM server: parse Anthropic/OpenAI requests; build bodies, errors and SSE."""

from __future__ import annotations

__all__ = [
    "CacheUnit",
    "ParsedRequest",
    "RequestError",
    "TokenUsage",
    "anthropic_error_body",
    "anthropic_message",
    "anthropic_sse",
    "count_tokens",
    "openai_completion",
    "openai_error_body",
    "openai_sse",
    "parse_anthropic",
    "parse_openai",
]

import functools
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from simulator.providers.base import ChatMessage

_WORD_RE = re.compile(r"\s*\S+")


# A prompt's long texts come back (the instructions in every call, the history in every turn, a transcript
# for every criterion): hashing a text again costs a tenth of splitting it into words again. Texts past
# 32 KiB are split each time, so what is remembered stays within 32 MiB.
_REMEMBERED = range(200, 32 * 1024)


@functools.lru_cache(maxsize=1024)
def _count_long(text: str) -> int:
    return len(text.split())


def count_tokens(text: str) -> int:
    """The fake tokenizer: one token per whitespace-separated word (cheap, predictable in tests)."""
    if isinstance(text, str) and len(text) in _REMEMBERED:
        return _count_long(text)
    return len(text.split())


def _pieces(text: str) -> list[str]:
    """Split text into one piece per word (leading whitespace kept), so the pieces concatenate to the text."""
    pieces = _WORD_RE.findall(text)
    rest = len(text) - sum(len(p) for p in pieces)
    if rest and pieces:
        pieces[-1] += text[-rest:]
    return pieces or ([text] if text else [])


_SLOT = "\x00piece\x00"
_SLOT_JSON = json.dumps(_SLOT).encode()


def _stamped(render: Callable[[str], bytes]) -> Callable[[str], bytes]:
    """`render` for the many text pieces of one stream at the cost of one: the bytes around the piece are
    made once and each piece is encoded as json.dumps encodes a string, so every event is byte for byte
    what `render` makes (`render` itself when the frame holds the marker already: a model named so)."""
    head, found, tail = render(_SLOT).partition(_SLOT_JSON)
    if not found or _SLOT_JSON in head or _SLOT_JSON in tail:
        return render
    return lambda piece: head + json.dumps(piece).encode() + tail


def _halves(text: str) -> tuple[str, str]:
    """Tool arguments are streamed in two parts, so clients must really concatenate partial JSON."""
    return text[: len(text) // 2], text[len(text) // 2 :]


class RequestError(ValueError):
    """A request the real API would reject with 400 invalid_request_error."""


class CacheUnit(NamedTuple):
    """One piece of a prompt, in order: what identifies it, its tokens, whether a cache breakpoint ends it.
    (A named tuple: a request makes one per message, and a frozen dataclass costs twice as much to make.)"""

    key: str
    tokens: int
    marked: bool = False

    @classmethod
    def of(cls, text: str, marked: bool = False, *, key: str | None = None) -> CacheUnit:
        return cls(text if key is None else key, count_tokens(text), marked)


@dataclass(frozen=True)
class ParsedRequest:
    """What both APIs have in common, plus the pieces the prompt-cache simulation needs."""

    model: str
    system: str | None
    messages: list[ChatMessage]
    tools: list[dict[str, Any]]
    schema: dict[str, Any] | None
    schema_kind: str | None  # "json_schema" or "json_object" (OpenAI), "json_schema" (Anthropic)
    temperature: float | None
    stream: bool
    max_tokens: int | None
    cache_units: list[CacheUnit] = field(default_factory=list)
    cache_seed: str = ""  # model + tools: a prompt cache never crosses these
    include_usage_in_stream: bool = False
    tool_results: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TokenUsage:
    """Token counts of one fake completion; `input_tokens` follows each API's own convention."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0


# ---------------------------------------------------------------------------------------------- parsing


def _require(body: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = body.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise RequestError(f"{key}: field required" if value is None else f"{key}: invalid type")
    return value


def _temperature(body: dict[str, Any]) -> float | None:
    value = body.get("temperature")
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise RequestError("temperature: must be a number")
    return float(value)


def _block_text(block: Any) -> str:
    """The text a content block contributes to the prompt (tool blocks rendered as short JSON-ish text)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        raise RequestError("content blocks must be objects")
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"[tool_use {block.get('name')}] {json.dumps(block.get('input', {}), sort_keys=True)}"
    if kind == "tool_result":
        inner = block.get("content", "")
        text = inner if isinstance(inner, str) else "\n".join(_block_text(b) for b in inner)
        return f"[tool_result] {text}"
    return f"[{kind}]"


def _cache_seed(model: str, tools: list[dict[str, Any]]) -> str:
    """What a prompt cache never crosses: the model and the tools (most requests have none)."""
    return model + (json.dumps(tools, sort_keys=True) if tools else "[]")


def _tools_anthropic(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RequestError("tools: must be a list")
    return [
        {
            "name": t.get("name"),
            "description": t.get("description", ""),
            "parameters": t.get("input_schema", {}),
        }
        for t in raw
    ]


def parse_anthropic(body: dict[str, Any]) -> ParsedRequest:
    """Read a `POST /v1/messages` body (blocks, cache_control, output_config) or raise RequestError."""
    model = _require(body, "model", str)
    max_tokens = _require(body, "max_tokens", int)
    raw_messages = _require(body, "messages", list)
    units: list[CacheUnit] = []
    tools = _tools_anthropic(body.get("tools"))
    if any(isinstance(t, dict) and t.get("cache_control") for t in body.get("tools") or []):
        units.append(CacheUnit("", 0, marked=True))  # a breakpoint after the tools (zero tokens)
    system: str | None = None
    raw_system = body.get("system")
    if isinstance(raw_system, str):
        system = raw_system
        units.append(CacheUnit.of(raw_system))
    elif isinstance(raw_system, list):
        texts = [_block_text(b) for b in raw_system]
        system = "\n".join(texts)
        units += [
            CacheUnit.of(t, bool(b.get("cache_control"))) for t, b in zip(texts, raw_system, strict=True)
        ]
    elif raw_system is not None:
        raise RequestError("system: must be a string or a list of text blocks")
    messages: list[ChatMessage] = []
    results: list[dict[str, Any]] = []
    offered: set[str] = set()  # the tool_use ids of the previous assistant message
    for i, message in enumerate(raw_messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise RequestError(f"messages.{i}.role: must be 'user' or 'assistant'")
        content = message.get("content")
        offered = _anthropic_tool_results(i, message, offered, results)
        if isinstance(content, str):
            blocks: list[Any] = [content]
            units.append(CacheUnit.of(content))
        elif isinstance(content, list):
            blocks = content
            units += [
                CacheUnit.of(_block_text(b), isinstance(b, dict) and bool(b.get("cache_control")))
                for b in blocks
            ]
        else:
            raise RequestError(f"messages.{i}.content: must be a string or a list of content blocks")
        messages.append(ChatMessage(role=message["role"], content="\n".join(_block_text(b) for b in blocks)))
    if body.get("cache_control") and units:  # automatic caching: the breakpoint moves to the last block
        units[-1] = CacheUnit(units[-1].key, units[-1].tokens, marked=True)
    schema = None
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("schema") or {}
    return ParsedRequest(
        model=model,
        system=system,
        messages=messages,
        tools=tools,
        schema=schema,
        schema_kind="json_schema" if schema is not None else None,
        temperature=_temperature(body),
        stream=body.get("stream") is True,
        max_tokens=max_tokens,
        cache_units=units,
        cache_seed=_cache_seed(model, tools),
        tool_results=results,
    )


def _anthropic_tool_results(
    index: int, message: dict[str, Any], offered: set[str], results: list[dict[str, Any]]
) -> set[str]:
    """Collect a user message's tool_result blocks, refusing one that answers no tool_use of the previous
    assistant message (as the real API does); return the tool_use ids this message offers."""
    content = message.get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    if message.get("role") == "assistant":
        return {str(b.get("id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"}
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        tool_id = str(block.get("tool_use_id"))
        if tool_id not in offered:
            raise RequestError(
                f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` blocks: {tool_id}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
        inner = block.get("content", "")
        text = inner if isinstance(inner, str) else "\n".join(_block_text(b) for b in inner)
        results.append({"id": tool_id, "content": text, "is_error": bool(block.get("is_error"))})
    return set()


def _openai_content(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(p) for p in content)
    raise RequestError("messages: content must be a string or a list of parts")


def _openai_tool_result(
    index: int, message: dict[str, Any], offered: set[str], results: list[dict[str, Any]]
) -> set[str]:
    """Collect a `tool` message's result, refusing one that answers no call of the last assistant message
    with tool calls (as the real API does); return the tool call ids still open."""
    role = message.get("role")
    if role == "assistant":
        return {str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, dict)}
    if role == "tool":
        if str(message.get("tool_call_id")) not in offered:
            raise RequestError(
                f"messages[{index}]: messages with role 'tool' must be a response to a preceding message "
                f"with 'tool_calls' (no tool call has the id {message.get('tool_call_id')!r})"
            )
        content = _openai_content(message.get("content"))
        results.append({"id": str(message.get("tool_call_id")), "content": content, "is_error": False})
    return offered


def parse_openai(body: dict[str, Any]) -> ParsedRequest:
    """Read a `POST /v1/chat/completions` body (messages, tools, response_format) or raise RequestError."""
    model = _require(body, "model", str)
    raw_messages = _require(body, "messages", list)
    system_parts: list[str] = []
    messages: list[ChatMessage] = []
    units: list[CacheUnit] = []
    results: list[dict[str, Any]] = []
    offered: set[str] = set()  # the tool_call ids of the last assistant message with tool_calls
    for i, message in enumerate(raw_messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise RequestError(f"messages[{i}].role: invalid value {role!r}")
        offered = _openai_tool_result(i, message, offered, results)
        parts = [_openai_content(message.get("content"))] if message.get("content") else []
        for tool_call in message.get("tool_calls") or []:
            function = tool_call.get("function", {})
            parts.append(f"[tool_call {function.get('name')}] {function.get('arguments', '')}")
        text = ("[tool_result] " if role in ("tool", "function") else "") + "\n".join(parts)
        units.append(CacheUnit.of(text, key=f"{role}\x00{text}"))
        if role in ("system", "developer"):
            system_parts.append(text)
        else:
            messages.append(ChatMessage(role="assistant" if role == "assistant" else "user", content=text))
    tools = [
        {
            "name": t.get("function", {}).get("name"),
            "description": t.get("function", {}).get("description", ""),
            "parameters": t.get("function", {}).get("parameters", {}),
        }
        for t in body.get("tools") or []
        if isinstance(t, dict)
    ]
    schema: dict[str, Any] | None = None
    kind: str | None = None
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        kind, schema = "json_schema", (fmt.get("json_schema") or {}).get("schema") or {}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":  # llama.cpp also reads a "schema" here
        kind, schema = "json_object", fmt.get("schema") or {"type": "object"}
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    return ParsedRequest(
        model=model,
        system="\n".join(system_parts) if system_parts else None,
        messages=messages,
        tools=tools,
        schema=schema,
        schema_kind=kind,
        temperature=_temperature(body),
        stream=body.get("stream") is True,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        cache_units=units,
        cache_seed=_cache_seed(model, tools),
        include_usage_in_stream=bool((body.get("stream_options") or {}).get("include_usage")),
        tool_results=results,
    )


# ---------------------------------------------------------------------------------------------- errors

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error_body(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    """`{"type": "error", "error": {"type", "message"}}`, the type defaulting from the status."""
    default = "api_error" if status >= 500 else "invalid_request_error"
    kind = error_type or _ANTHROPIC_ERROR_TYPES.get(status, default)
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_error_body(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    """`{"error": {"message", "type", "param", "code"}}` as OpenAI sends it."""
    if status == 429:
        kind, code = error_type or "requests", "rate_limit_exceeded"
    elif status == 401:
        kind, code = error_type or "invalid_request_error", "invalid_api_key"
    else:
        kind, code = error_type or ("server_error" if status >= 500 else "invalid_request_error"), None
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# ---------------------------------------------------------------------------------------------- Anthropic


def _anthropic_usage(usage: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation,
        "cache_read_input_tokens": usage.cache_read,
    }


def _as_input(arguments: dict[str, Any] | str) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def anthropic_message(
    *,
    message_id: str,
    model: str,
    text: str,
    tool_calls: list[tuple[str, dict[str, Any] | str]],
    usage: TokenUsage,
    stop_reason: str,
) -> dict[str, Any]:
    """A complete Messages API response: text and/or tool_use content blocks, stop_reason, usage."""
    content: list[dict[str, Any]] = []
    if text or not tool_calls:
        content.append({"type": "text", "text": text})
    for number, (name, arguments) in enumerate(tool_calls):
        tool_id = "toolu_" + message_id.removeprefix("msg_") + (f"_{number}" if number else "")
        # The Messages API's input is an object: arguments given as text are sent parsed (or as text, when
        # they are not JSON: an input no real server sends, the client's to refuse).
        content.append({"type": "tool_use", "id": tool_id, "name": name, "input": _as_input(arguments)})
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _anthropic_usage(usage),
    }


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_sse(message: dict[str, Any], *, malformed: bool = False) -> Iterator[tuple[bytes, int]]:
    """The SSE events of a Messages stream for a finished message, each with the tokens it carries."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    yield _event("message_start", {"type": "message_start", "message": start}), 0
    yield _event("ping", {"type": "ping"}), 0
    if malformed:
        yield b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0,\n\n', 0
        return
    for index, block in enumerate(message["content"]):
        head: dict[str, Any] = (
            {"type": "text", "text": ""} if block["type"] == "text" else {**block, "input": {}}
        )
        kind, key, parts = (
            ("text_delta", "text", _pieces(block["text"]))
            if block["type"] == "text"
            else ("input_json_delta", "partial_json", _halves(json.dumps(block["input"])))
        )
        start_event = {"type": "content_block_start", "index": index, "content_block": head}
        yield _event("content_block_start", start_event), 0

        def delta(part: str, index: int = index, kind: str = kind, key: str = key) -> bytes:
            event = {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: part}}
            return _event("content_block_delta", event)

        delta_event = _stamped(delta)
        for part in parts:
            yield delta_event(part), 1
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index}), 0
    tail = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield _event("message_delta", {"type": "message_delta", "delta": tail, "usage": usage}), 0
    yield _event("message_stop", {"type": "message_stop"}), 0


# ---------------------------------------------------------------------------------------------- OpenAI


def openai_completion(
    *,
    completion_id: str,
    model: str,
    text: str,
    tool_calls: list[tuple[str, dict[str, Any] | str]],
    usage: TokenUsage,
    finish_reason: str,
) -> dict[str, Any]:
    """A complete `chat.completion` object: message content and/or tool_calls, finish_reason, usage."""
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not tool_calls else None}
    message["refusal"] = None
    if tool_calls:
        stem = "call_" + completion_id.removeprefix("chatcmpl-")
        message["tool_calls"] = [
            {
                "id": stem + (f"_{number}" if number else ""),
                "type": "function",
                # Text as given: a model's broken arguments (`{not json`) reach the client as it would send them.
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for number, (name, arguments) in enumerate(tool_calls)
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": "fp_fake",
    }


def _data(payload: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def openai_sse(
    completion: dict[str, Any], *, include_usage: bool, malformed: bool = False
) -> Iterator[tuple[bytes, int]]:
    """The `chat.completion.chunk` stream of a finished completion, ending in `data: [DONE]`."""
    base = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        return _data({**base, "choices": choices})

    yield chunk({"role": "assistant", "content": ""}), 0
    if malformed:
        yield b'data: {"id": "' + base["id"].encode() + b'", "choices": [\n\n', 0
        return
    content_chunk = _stamped(lambda piece: chunk({"content": piece}))
    for piece in _pieces(message["content"] or ""):
        yield content_chunk(piece), 1
    for i, call in enumerate(message.get("tool_calls") or []):
        function = {"name": call["function"]["name"], "arguments": ""}
        yield (
            chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": function}]}),
            0,
        )
        for part in _halves(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}), 1
    yield chunk({}, choice["finish_reason"]), 0
    if include_usage:
        yield _data(dict(base, choices=[], usage=completion["usage"])), 0
    yield b"data: [DONE]\n\n", 0
