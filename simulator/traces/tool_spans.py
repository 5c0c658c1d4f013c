"""OTel GenAI `execute_tool` spans, read back into the tool calls of imported bot turns.

An instrumented agent writes one `execute_tool` span per tool it ran (name, arguments, result or error,
and how long it took). The chat spans' messages say *that* the model asked for a tool; the tool span says
when it ran, for how long and, when the messages lack it, what came back. Each span fills in the tool
call it belongs to (by `gen_ai.tool.call.id`, else by name and arguments); a span no message mentions
becomes a tool call of the bot turn it ran in, so a trace whose messages omit tool calls still shows them.
"""

from __future__ import annotations

__all__ = ["attach_tool_spans", "is_tool_span", "tool_span"]

from datetime import UTC, datetime
from typing import Any

from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.record.parts import Part, ToolCallPart
from simulator.record.transcript import Turn
from simulator.traces.messages import ToolSpan

OPERATION = "gen_ai.operation.name"


def is_tool_span(attributes: dict[str, Any]) -> bool:
    return attributes.get(OPERATION) == "execute_tool"


def _json(value: Any) -> Any:
    """An attribute that holds JSON text (arguments, result) as its value; other text as it is."""
    if isinstance(value, str):
        try:
            return loads_bounded(value, "the attribute")
        except JSONRefused:
            return value
    return value


def tool_span(attributes: dict[str, Any], start_ns: int, end_ns: int, error: str | None) -> ToolSpan:
    """The tool call an `execute_tool` span records (its status or `error.type` is the call's error)."""
    arguments = _json(attributes.get("gen_ai.tool.call.arguments"))
    call_id = attributes.get("gen_ai.tool.call.id")
    failed = error or attributes.get("error.type")
    return ToolSpan(
        name=str(attributes.get("gen_ai.tool.name") or "?"),
        call_id=str(call_id) if call_id is not None else None,
        arguments=arguments
        if isinstance(arguments, dict)
        else ({} if arguments is None else {"value": arguments}),
        result=_json(attributes.get("gen_ai.tool.call.result")),
        error=str(failed) if failed else None,
        started_at=datetime.fromtimestamp(start_ns / 1e9, UTC) if start_ns else None,
        latency_s=max(0.0, (end_ns - start_ns) / 1e9),
    )


def _fill(call: ToolCallPart, span: ToolSpan) -> None:
    call.started_at, call.latency_s = span.started_at, span.latency_s
    if span.error is not None and call.error is None:
        # A failed call: its response message, when one carried `{"error": ...}` (as export-otel writes
        # it), says more than the span's error type.
        said = call.result.get("error") if isinstance(call.result, dict) and len(call.result) == 1 else None
        call.error, call.result = (str(said), None) if said is not None else (span.error, call.result)
    elif call.result is None and span.result is not None:
        call.result = span.result


def _unfilled(turns: list[Turn]) -> list[ToolCallPart]:
    return [
        p
        for t in turns
        if t.role == "bot"
        for p in t.parts
        if isinstance(p, ToolCallPart) and p.latency_s is None and p.side == "bot"
    ]


def _host(turns: list[Turn], span: ToolSpan) -> Turn | None:
    """The bot turn a tool ran in: the first whose reply came at or after the tool started, else the last."""
    bots = [t for t in turns if t.role == "bot"]
    if not bots:
        return None
    if span.started_at is not None:
        for turn in bots:
            if turn.started_at >= span.started_at:
                return turn
    return bots[-1]


def _insert(turn: Turn, call: ToolCallPart) -> None:
    """A bot turn's tool calls come before the text it sent (docs/environment.md)."""
    parts: list[Part] = list(turn.parts)
    at = next((i for i, p in enumerate(parts) if not isinstance(p, ToolCallPart)), len(parts))
    parts.insert(at, call)
    turn.parts = parts


def attach_tool_spans(turns: list[Turn], spans: list[ToolSpan]) -> None:
    """Fill in (or add) the tool calls of `turns` from the conversation's `execute_tool` spans."""
    for span in spans:
        open_calls = _unfilled(turns)
        match = next((c for c in open_calls if span.call_id is not None and c.id == span.call_id), None)
        if match is None:
            match = next(
                (
                    c
                    for c in open_calls
                    if c.name == span.name
                    and c.arguments == span.arguments
                    and (span.call_id is None or c.id is None)
                ),
                None,
            )
        if match is not None:
            _fill(match, span)
            continue
        host = _host(turns, span)
        if host is not None:
            call = ToolCallPart(name=span.name, arguments=span.arguments, id=span.call_id)
            _fill(call, span)
            _insert(host, call)
