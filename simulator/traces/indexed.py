"""Messages as flat, indexed span attributes: OpenInference and Traceloop/OpenLLMetry's older form.

- OpenInference (Arize Phoenix and its instrumentations): `llm.input_messages.{i}.message.role`,
  `.message.content` (or `.message.contents.{j}.message_content.text`), `.message.tool_calls.{j}.tool_call.
  function.name` / `.arguments`, `.message.tool_call_id`; the output in `llm.output_messages.{i}.message.*`.
- Traceloop / OpenLLMetry before the GenAI conventions: `gen_ai.prompt.{i}.role` / `.content`, the output in
  `gen_ai.completion.{i}.role` / `.content` / `.tool_calls.{j}.name` / `.arguments`.

Both are read into the same neutral `Message` the GenAI JSON forms give, so stitching and everything after
it is shared (docs/traces.md).
"""

from __future__ import annotations

__all__ = ["indexed_messages"]

import contextlib
import re
from typing import Any

from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.traces.genai import parts_from_content
from simulator.traces.messages import Message, Part

# (input prefix, output prefix, the part of each message's key holding its fields)
FORMS = (
    ("llm.input_messages", "llm.output_messages", "message."),
    ("gen_ai.prompt", "gen_ai.completion", ""),
)
_INDEX = re.compile(r"^(\d+)\.(.+)$")
_HEADS = tuple(f"{prefix}." for form in FORMS for prefix in form[:2])  # what every indexed key starts with


def _grouped(attrs: dict[str, Any], prefix: str, inner: str) -> dict[int, dict[str, Any]]:
    """`{prefix}.{i}.{inner}{field}` attributes as {i: {field: value}}."""
    out: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        match = _INDEX.match(key[len(head) :])
        if match is None or not match.group(2).startswith(inner):
            continue
        out.setdefault(int(match.group(1)), {})[match.group(2)[len(inner) :]] = value
    return out


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        with contextlib.suppress(JSONRefused):
            return loads_bounded(value, "the arguments")
    return value


def _tool_calls(fields: dict[str, Any]) -> list[Part]:
    """Tool calls, OpenInference's `tool_calls.{j}.tool_call.function.name` or Traceloop's
    `tool_calls.{j}.name`, in index order."""
    calls: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        match = re.match(r"^tool_calls\.(\d+)\.(?:tool_call\.)?(?:function\.)?(.+)$", key)
        if match:
            calls.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [
        {
            "type": "tool_call",
            "id": call.get("id"),
            "name": call.get("name"),
            "arguments": _arguments(call.get("arguments")),
        }
        for _, call in sorted(calls.items())
    ]


def _contents(fields: dict[str, Any]) -> list[Part]:
    """OpenInference's multi-part `contents.{j}.message_content.text` (text parts only)."""
    texts: dict[int, str] = {}
    for key, value in fields.items():
        match = re.match(r"^contents\.(\d+)\.message_content\.text$", key)
        if match and isinstance(value, str):
            texts[int(match.group(1))] = value
    return [{"type": "text", "content": text} for _, text in sorted(texts.items())]


def _content(value: Any) -> list[Part]:
    """A `content` attribute: text, or (some instrumentations) a JSON list of content blocks."""
    if isinstance(value, str) and value.startswith("["):
        with contextlib.suppress(JSONRefused):
            blocks = loads_bounded(value, "the content")
            if isinstance(blocks, list) and all(isinstance(b, dict) for b in blocks):
                return parts_from_content(blocks)
    return parts_from_content(value)


def _message(fields: dict[str, Any], what: str, default_role: str | None) -> Message:
    role = fields.get("role") or default_role
    if not isinstance(role, str) or not role:
        raise ValueError(f"{what} has no role")
    role = {"human": "user", "ai": "assistant", "model": "assistant", "function": "tool"}.get(role, role)
    if role == "tool":
        body = fields.get("content")
        return Message(
            "tool", [{"type": "tool_call_response", "id": fields.get("tool_call_id"), "response": body}]
        )
    parts = _content(fields["content"]) if "content" in fields else _contents(fields)
    return Message(role, parts + _tool_calls(fields))


def indexed_messages(attrs: dict[str, Any]) -> tuple[list[Message], list[Message]]:
    """A span's (input, output) messages in either indexed form; raises ValueError on a message without a
    role. Empty lists when the span holds neither."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    if not any(key.startswith(_HEADS) for key in attrs):  # the GenAI JSON form's spans: one pass, not four
        return inputs, outputs
    for in_prefix, out_prefix, inner in FORMS:
        for prefix, into, default in ((in_prefix, inputs, None), (out_prefix, outputs, "assistant")):
            for index, fields in sorted(_grouped(attrs, prefix, inner).items()):
                into.append(_message(fields, f"{prefix}.{index}", default))
    return inputs, outputs
