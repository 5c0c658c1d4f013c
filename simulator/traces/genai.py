"""OpenTelemetry GenAI messages (semantic conventions, gen-ai spans and events) to the neutral `Message`.

Two representations are read: the current one, JSON arrays on the span (or on a
`gen_ai.client.inference.operation.details` event) in `gen_ai.input.messages`, `gen_ai.output.messages` and
`gen_ai.system_instructions`, each message a role plus typed parts; and the older per-message events
(`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`,
`gen_ai.choice`) whose body holds `content` and `tool_calls`. See docs/traces.md for the references.
"""

from __future__ import annotations

__all__ = [
    "INPUT",
    "OLD_EVENTS",
    "OUTPUT",
    "SYSTEM",
    "event_message",
    "messages_from_json",
    "parts_from_content",
    "system_texts",
]

import contextlib
import json
from typing import Any

from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.traces.messages import Message, Part

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
SYSTEM = "gen_ai.system_instructions"
# Older per-message events: event name -> (role, is it the model's output?).
OLD_EVENTS = {
    "gen_ai.system.message": ("system", False),
    "gen_ai.user.message": ("user", False),
    "gen_ai.assistant.message": ("assistant", False),
    "gen_ai.tool.message": ("tool", False),
    "gen_ai.choice": ("assistant", True),
}


def _loads(value: Any, what: str) -> Any:
    if isinstance(value, str):
        return loads_bounded(value, what)  # JSONRefused is a ValueError naming `what`
    return value


def _part(raw: Any, what: str) -> Part:
    if isinstance(raw, str):
        return {"type": "text", "content": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise ValueError(f"{what}: a part must be an object with a type")
    kind = raw["type"]
    if kind == "text":
        return {"type": "text", "content": str(raw.get("content") or raw.get("text") or "")}
    if kind == "tool_call":
        return {
            "type": "tool_call",
            "id": raw.get("id"),
            "name": raw.get("name"),
            "arguments": raw.get("arguments"),
        }
    if kind == "tool_call_response":
        # The conventions name the field `response`; some instrumentations write `result`.
        body = raw["response"] if "response" in raw else raw.get("result")
        return {"type": "tool_call_response", "id": raw.get("id"), "response": body}
    if kind == "reasoning":
        return {"type": "reasoning", "content": str(raw.get("content") or "")}
    return dict(raw)  # blob, uri, file, server tool calls: kept as they are


def messages_from_json(value: Any, what: str) -> list[Message]:
    """`gen_ai.input.messages` / `gen_ai.output.messages` (a JSON string or already decoded) as messages."""
    data = _loads(value, what)
    if not isinstance(data, list):
        raise ValueError(f"{what} must be a JSON array of messages")
    messages = []
    for number, raw in enumerate(data):
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            raise ValueError(f"{what}[{number}] must be an object with a role")
        parts = raw.get("parts")
        if parts is None and "content" in raw:
            parts = parts_from_content(raw.get("content"))
        if not isinstance(parts, list):
            raise ValueError(f"{what}[{number}] has no parts list")
        messages.append(Message(raw["role"], [_part(p, f"{what}[{number}]") for p in parts]))
    return messages


def system_texts(value: Any, what: str) -> list[str]:
    """`gen_ai.system_instructions`: an array of parts (or plain text) as texts."""
    data = _loads(value, what) if isinstance(value, str) and value.lstrip()[:1] in "[{" else value
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"{what} must be an array of parts")
    return [p.get("content", "") if isinstance(p, dict) else str(p) for p in data if p]


def parts_from_content(content: Any) -> list[Part]:
    """An older body's `content` (text, or a list of content blocks) as parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    if isinstance(content, list):
        out: list[Part] = []
        for block in content:
            if isinstance(block, str):
                out.append({"type": "text", "content": block})
            elif isinstance(block, dict):
                text = block.get("text", block.get("content"))
                if isinstance(text, str):
                    out.append({"type": "text", "content": text})
        return out
    return [{"type": "text", "content": json.dumps(content)}]


def _tool_calls(calls: Any) -> list[Part]:
    parts: list[Part] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(JSONRefused):  # arguments that are not JSON are kept as text
                arguments = loads_bounded(arguments, "the arguments")
        parts.append(
            {"type": "tool_call", "id": call.get("id"), "name": function.get("name"), "arguments": arguments}
        )
    return parts


def event_message(name: str, body: dict[str, Any]) -> tuple[Message, bool]:
    """One older per-message event as a message, and whether it is the model's output."""
    role, output = OLD_EVENTS[name]
    if name == "gen_ai.choice" and isinstance(body.get("message"), dict):
        body = body["message"]
    if role == "tool":
        return Message(
            "tool", [{"type": "tool_call_response", "id": body.get("id"), "response": body.get("content")}]
        ), output
    parts = parts_from_content(body.get("content")) + _tool_calls(body.get("tool_calls"))
    return Message(role, parts), output
