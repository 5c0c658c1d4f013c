"""The importers' neutral form: messages with typed parts (the OpenTelemetry GenAI shape), grouped into
conversations, and the problems found on the way (file, line, reason)."""

from __future__ import annotations

__all__ = ["Conversation", "Message", "Parsed", "SkippedRecord", "ToolSpan", "message_key", "part_text"]

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# A part is a dict in the OpenTelemetry GenAI message shape: {"type": "text", "content": ...},
# {"type": "tool_call", "id", "name", "arguments"}, {"type": "tool_call_response", "id", "response"},
# {"type": "reasoning", "content"}.
Part = dict[str, Any]


@dataclass
class Message:
    """One message: a role (system, user, assistant, tool), its parts and, when known, when it was sent."""

    role: str
    parts: list[Part]
    time: datetime | None = None
    latency_s: float | None = None  # a reply's: the duration of the LLM call that produced it, when known


def part_text(part: Part) -> str:
    """The text of a text part (empty for other parts)."""
    if part.get("type") == "text":
        return str(part.get("content") or "")
    return ""


def message_key(message: Message) -> str:
    """What makes two copies of a message the same message (time aside): role and parts."""
    # repr, not JSON: parts are built in a fixed key order by the parsers, and repr is several times faster.
    return repr((message.role, message.parts))


@dataclass
class ToolSpan:
    """One OTel GenAI `execute_tool` span: a tool the application ran, when, for how long, with what."""

    name: str
    call_id: str | None
    arguments: dict[str, Any]
    result: Any
    error: str | None
    started_at: datetime | None
    latency_s: float


@dataclass
class Conversation:
    """One conversation as read from a source, before it becomes a ConversationRecord."""

    key: str
    messages: list[Message] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    final_state: dict[str, Any] | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None  # why the conversation ended in an error (stop reason `error`)
    where: str = ""  # file:line of its first record, for problems found later
    tools: list[ToolSpan] = field(default_factory=list)  # its execute_tool spans, in time order


@dataclass
class SkippedRecord:
    """A record that was skipped: where it is and why (never its content: it may hold personal data)."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.reason}"


@dataclass
class Parsed:
    """What a parser read: the conversations, the skipped records and how many records it saw."""

    conversations: list[Conversation]
    problems: list[SkippedRecord] = field(default_factory=list)
    records: int = 0
    # LLM-call spans recorded without usable messages (content capture off, or hidden), by the fix.
    silence: Counter[str] = field(default_factory=Counter)
