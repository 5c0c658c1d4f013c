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
    "InputHistory",
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


_JSON_SPACE = " \t\n\r"  # JSON's white space only (str.strip's default takes more, which JSON refuses)


class InputHistory:
    """One conversation's last `gen_ai.input.messages` text and its messages, so that the next call's
    input, which repeats that history and adds what followed, is parsed only past it: a conversation of n
    calls parses n calls' new messages, not n histories (quadratic in its length). Exact: only text that
    extends the last one (its array up to the closing bracket, then a comma) takes the short way, and
    anything the short way cannot read is parsed whole, so every error is the one a whole parse gives."""

    def __init__(self) -> None:
        self._text: str | None = None
        # (role, parts) of the last input: each call gets new Messages (callers stamp their times), sharing
        # the parts, which nothing changes once parsed (the importer's redaction replaces them).
        self._held: list[tuple[str, list[Part]]] = []

    def messages(self, value: Any, what: str) -> list[Message]:
        """`messages_from_json(value, what)`, reusing the last input's messages where `value` extends it."""
        if not isinstance(value, str):
            return messages_from_json(value, what)
        found = self._extended(value, what)
        if found is None:
            found = messages_from_json(value, what)
        self._text, self._held = value, [(m.role, m.parts) for m in found]
        return found

    def _extended(self, value: str, what: str) -> list[Message] | None:
        """The messages of `value` when it is the last text's array with more messages; None otherwise."""
        text, held = self._text, self._held
        if text is None or not held:
            return None
        if value == text:
            return [Message(role, parts) for role, parts in held]
        head = text.rstrip(_JSON_SPACE)
        if not head.endswith("]") or not value.startswith(head[:-1]):
            return None
        rest = value[len(head) - 1 :].lstrip(_JSON_SPACE)
        if not rest.startswith(","):
            return None
        try:
            # `[` and what follows the comma: the rest of the array, read by the same decoder and bounds
            # (its depth is the whole array's: the elements are at the same level).
            more = messages_from_json("[" + rest[1:], what)
        except ValueError:
            return None
        if not more:  # `[...,]`: a trailing comma, which a whole parse refuses
            return None
        return [Message(role, parts) for role, parts in held] + more


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
