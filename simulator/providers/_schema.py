"""JSON-schema helpers: the schema told in the system prompt (servers without a schema mode, and to say what the
fields mean), the OpenAI-style message list, and caps for servers that turn a schema into a grammar (llama.cpp)."""

from __future__ import annotations

__all__ = ["cap_string_lengths", "with_schema"]

import json
from typing import Any

from simulator.providers.base import ChatMessage

# Under a grammar a small model may write one string until max_tokens runs out and the JSON never closes;
# a bound on every free-text string lets it finish. About 150 tokens of reasoning is plenty for a verdict.
GRAMMAR_MAX_STRING = 600


def cap_string_lengths(schema: Any, max_length: int = GRAMMAR_MAX_STRING) -> Any:
    """A copy of `schema` where every string without an enum or maxLength gets `maxLength`."""
    if isinstance(schema, list):
        return [cap_string_lengths(item, max_length) for item in schema]
    if not isinstance(schema, dict):
        return schema
    capped = {key: cap_string_lengths(value, max_length) for key, value in schema.items()}
    if capped.get("type") == "string" and "enum" not in capped and "maxLength" not in capped:
        capped["maxLength"] = max_length
    return capped


def with_schema(system: str, schema: dict[str, Any], ask: str = "Answer with one JSON object") -> str:
    """The system prompt with the JSON schema the answer must match appended."""
    return f"{system}\n\n{ask} matching this JSON schema:\n{json.dumps(schema)}".strip()


def chat_messages(system: str, messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """OpenAI-style chat messages: the system prompt first (when there is one), then the conversation."""
    head: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    return head + [{"role": m.role, "content": m.content} for m in messages]
