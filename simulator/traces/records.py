"""Imported conversations as run records: turns from messages (user vs bot side), ids safe for the record,
the decision tool's arguments as the final state."""

from __future__ import annotations

__all__ = ["ConvertOptions", "record_ids", "safe_id", "to_record"]

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args

from pydantic import ValidationError

from simulator.config.scenario import ID_PATTERN, MAX_ID_CHARS, as_scenario_id
from simulator.record.models import ConversationRecord, ErrorInfo, StopReason, conversation_key
from simulator.record.parts import (
    EventPart,
    MediaPart,
    OptionsPart,
    PickPart,
    TextPart,
    ToolCallPart,
    parts_adapter,
)
from simulator.record.parts import Part as RecordPart
from simulator.record.transcript import Role, Turn
from simulator.traces.messages import Conversation, Message, part_text
from simulator.traces.tool_spans import attach_tool_spans


@dataclass
class ConvertOptions:
    now: datetime
    exclude_system: bool = False
    decision_tool: str = "record_decision"
    default_stop_reason: str = "user_done"


_RECORD_KEY = re.compile(f"^({ID_PATTERN[1:-1]})#(\\d+)$")  # `id#repeat` of a scenario id


def record_ids(key: str, taken: set[str], kept: set[str]) -> tuple[str, int]:
    """(scenario id, repeat) of an imported conversation. A key that is already a record id
    (`scenario#repeat`, as `export-otel` writes it) is kept as it is, so an exported run imported again
    lines up with its labels and comparisons; any other key becomes a safe, unique scenario id, repeat 0."""
    match = _RECORD_KEY.match(key.strip())
    if match and len(match.group(1)) <= MAX_ID_CHARS and key.strip() not in kept:
        kept.add(key.strip())
        taken.add(match.group(1))
        return match.group(1), int(match.group(2))
    scenario = safe_id(key, taken)
    kept.add(f"{scenario}#0")
    return scenario, 0


def safe_id(key: str, taken: set[str]) -> str:
    """A scenario id from a conversation key (`config.scenario.as_scenario_id`: the record's key is
    `id#repeat`, the id names files and addresses), unique."""
    base = as_scenario_id(key)
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    taken.add(candidate)
    return candidate


_SIDES: dict[str, Role] = {"user": "user", "assistant": "bot", "tool": "bot"}


def _side(message: Message) -> Role | None:
    return _SIDES.get(message.role)


# Parts the record knows beyond GenAI's text and tool calls, exported as generic parts (traces/export.py).
_RICH = {"options", "pick", "media", "event"}


def _record_part(part: dict[str, Any], calls: dict[str, ToolCallPart]) -> RecordPart | None:
    """A GenAI message part as a record part: text, a tool call (a `tool_call_response` fills in the result
    of the call it answers, by id, and gives no part of its own), or an options / pick / media / event part
    as `simulator export-otel` writes them. None for anything else (reasoning, blobs: kept in `raw`)."""
    kind = part.get("type")
    if kind == "text":
        text = part_text(part)
        return TextPart(text=text) if text else None
    if kind == "tool_call":
        arguments = part.get("arguments")
        call = ToolCallPart(
            name=str(part.get("name") or "?"),
            arguments=arguments if isinstance(arguments, dict) else {"value": arguments},
            id=str(part["id"]) if part.get("id") is not None else None,
        )
        if call.id is not None:
            calls[call.id] = call
        return call
    if kind == "tool_call_response":
        answered = calls.get(str(part.get("id")))
        if answered is not None:
            answered.result = part.get("response")
            return None
        return ToolCallPart(name="?", id=str(part.get("id")), result=part.get("response"))
    if kind in _RICH:
        try:
            return parts_adapter().validate_python([part])[0]
        except ValidationError:
            return None
    return None


@dataclass
class _Draft:
    """A turn while its messages are gathered (one side's consecutive messages merge into one), validated
    as a Turn once, complete: Turn's validators repair every text part it holds then, merged ones too."""

    role: Role
    parts: list[RecordPart]
    started_at: datetime
    latency_s: float
    raw: dict[str, Any] | None = None


def _turns(conversation: Conversation, options: ConvertOptions) -> list[Turn]:
    drafts: list[_Draft] = []
    pending: list[dict[str, Any]] = []  # bot-side parts the record has no type for (reasoning, blobs)
    waiting: list[RecordPart] = []  # bot-side parts with no message yet (tool calls): they join the next
    calls: dict[str, ToolCallPart] = {}
    for message in conversation.messages:
        side = _side(message)
        if side is None:
            continue
        parts: list[RecordPart] = []
        for raw in message.parts:
            part = _record_part(raw, calls)
            if part is not None:
                parts.append(part)
            elif side == "bot" and raw.get("type") not in ("text", "tool_call_response"):
                pending.append(raw)
        if not any(isinstance(p, TextPart | PickPart | OptionsPart | MediaPart | EventPart) for p in parts):
            if side == "bot":
                waiting += parts
            continue
        started = message.time or (drafts[-1].started_at if drafts else options.now)
        latency = (message.latency_s or 0.0) if side == "bot" else 0.0  # the LLM call's duration
        if side == "bot":
            parts, waiting = waiting + parts, []
        if drafts and drafts[-1].role == side:
            drafts[-1].parts.extend(parts)
            drafts[-1].latency_s = max(drafts[-1].latency_s, latency)
        else:
            drafts.append(_Draft(side, parts, started, latency))
        if side == "bot" and pending:
            drafts[-1].raw = {"parts": (drafts[-1].raw or {}).get("parts", []) + pending}
            pending = []
    last_bot = next((d for d in reversed(drafts) if d.role == "bot"), None)
    if last_bot is not None and waiting:
        last_bot.parts.extend(waiting)
    if pending and last_bot is not None:
        last_bot.raw = {"parts": (last_bot.raw or {}).get("parts", []) + pending}
    if conversation.system and not options.exclude_system and drafts:
        drafts[0].raw = {**(drafts[0].raw or {}), "system_instructions": conversation.system}
    turns = [
        Turn(index=n, role=d.role, parts=d.parts, started_at=d.started_at, latency_s=d.latency_s, raw=d.raw)
        for n, d in enumerate(drafts)
    ]
    attach_tool_spans(turns, conversation.tools)  # tool calls only: no text for Turn's validators to repair
    return turns


def _decision(conversation: Conversation, tool: str) -> dict[str, Any] | None:
    calls = [
        p.get("arguments")
        for m in conversation.messages
        for p in m.parts
        if p.get("type") == "tool_call" and p.get("name") == tool and isinstance(p.get("arguments"), dict)
    ]
    last = calls[-1] if calls else None
    return dict(last) if isinstance(last, dict) else None


def to_record(
    conversation: Conversation, scenario_id: str, options: ConvertOptions, repeat: int = 0
) -> ConversationRecord:
    """One imported conversation as a ConversationRecord; ValueError when it cannot be one."""
    turns = _turns(conversation, options)
    stop = conversation.stop_reason or options.default_stop_reason
    ended_badly = stop == "error"  # a failed last call may leave the user without an answer
    if not any(t.role == "user" for t in turns) or not (ended_badly or any(t.role == "bot" for t in turns)):
        raise ValueError("no user message or no assistant message with text")
    if stop not in get_args(StopReason):
        raise ValueError(f"stop reason '{stop}' is not one of {', '.join(get_args(StopReason))}")
    times = [m.time for m in conversation.messages if m.time is not None]
    record = ConversationRecord(
        id=conversation_key(scenario_id, repeat),
        scenario_id=scenario_id,
        repeat=repeat,
        stop_reason=stop,  # type: ignore[arg-type]
        turns=[],
        final_state=conversation.final_state or _decision(conversation, options.decision_tool),
        error=ErrorInfo(
            source="bot", kind="trace_error", message=conversation.error or "recorded as an error"
        )
        if ended_badly
        else None,
        started_at=min(times, default=options.now),
        ended_at=max(times, default=options.now),
        tags=list(conversation.tags),
        user_model="real",
        bot=", ".join(conversation.models) or "unknown",
        bot_conversation_id=conversation.key,
    )
    # Each turn was validated as a Turn, complete (`_turns`); passed to the record's validation, pydantic
    # would run Turn's after-validators on every one of them again.
    record.turns = turns
    return record
