"""Read OTLP JSON traces (as the OpenTelemetry Collector's file exporter writes them) into conversations.

A file is one `{"resourceSpans": [...]}` object or JSON lines of them (`resourceLogs` too: log-based
GenAI events are attached to their span). Spans are grouped into conversations by `gen_ai.conversation.id`
(or another attribute, or the trace id), ordered by start time, and de-duplicated: each LLM call repeats
the history in its input, so a span adds only the messages that follow the longest overlap with what the
conversation already holds.
"""

from __future__ import annotations

__all__ = [
    "CONVERSATION_ID",
    "Span",
    "conversations_from_spans",
    "own_key",
    "read_otlp",
    "span_messages",
    "spans_from_documents",
    "stitch",
]

import base64
import binascii
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.errors import UserError
from simulator.traces import genai
from simulator.traces.indexed import indexed_messages
from simulator.traces.messages import Conversation, Message, Parsed, SkippedRecord, ToolSpan, message_key
from simulator.traces.tool_spans import is_tool_span, tool_span

CONVERSATION_ID = "gen_ai.conversation.id"
# Tried in order when no --conversation-key is given: the GenAI conventions', then OpenInference's session.
CONVERSATION_KEYS = (CONVERSATION_ID, "session.id")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


@dataclass
class Span:
    trace_id: str
    span_id: str
    start: int
    end: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    line: int | None
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None  # the status message when the span's status is ERROR

    @property
    def ref(self) -> tuple[str, str]:
        """A span id is unique within its trace only."""
        return self.trace_id, self.span_id


def any_value(value: Any) -> Any:
    """An OTLP JSON AnyValue as a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP JSON key/value list as a dict (TypeError when it is not a list: the wrong shape)."""
    if items is not None and not isinstance(items, list):
        raise TypeError(f"attributes must be a list of {{key, value}}, not {type(items).__name__}")
    return {
        kv["key"]: any_value(kv.get("value")) for kv in items or [] if isinstance(kv, dict) and "key" in kv
    }


def _hex_id(value: Any) -> str:
    """Trace and span ids: hex in OTLP JSON, base64 in protobuf's generic JSON mapping; both accepted."""
    text = str(value or "")
    if all(c in "0123456789abcdefABCDEF" for c in text) and len(text) in (16, 32):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except (binascii.Error, ValueError):
        return text


def _documents(path: Path, parsed: Parsed) -> list[tuple[int | None, dict[str, Any]]]:
    """The file's OTLP documents: one JSON document, or one per line (the collector's file exporter). A
    document cut short or not JSON at all is one clear error, never hundreds of skipped "lines"."""
    text = path.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
        return [(None, d) for d in (whole if isinstance(whole, list) else [whole]) if isinstance(d, dict)]
    except RecursionError:
        raise UserError(f"{path}: nested too deeply to read; this is not an OTLP export") from None
    except json.JSONDecodeError as exc:
        first = next((line for line in text.splitlines() if line.strip()), "")
        if not _is_json_object(first):
            cut = "it ends in the middle of a document (cut short?)" if exc.pos >= len(text) - 1 else exc.msg
            raise UserError(
                f"{path}:{exc.lineno}: not valid OTLP JSON ({cut}); export it again in full, as OTLP JSON "
                "(one document, or one per line)"
            ) from None
    docs: list[tuple[int | None, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            parsed.problems.append(SkippedRecord(str(path), number, f"not JSON ({exc.msg})"))
            continue
        except RecursionError:
            parsed.problems.append(SkippedRecord(str(path), number, "nested too deeply to read"))
            continue
        if not isinstance(doc, dict):
            parsed.problems.append(SkippedRecord(str(path), number, "not a JSON object of resourceSpans"))
            continue
        docs.append((number, doc))
    return docs


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def _spans(path: Path, parsed: Parsed) -> list[Span]:
    """Every span (and log-record event) of the file; a document of the wrong shape is one clear error."""
    try:
        return list(spans_from_documents(_documents(path, parsed), parsed).values())
    except ShapeError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise UserError(
            f"{where}: not OTLP JSON of the expected shape (resourceSpans: [{{scopeSpans: [{{spans: "
            f"[...]}}]}}], each a list of objects; {exc})"
        ) from None


class ShapeError(ValueError):
    """An OTLP document of the wrong shape (a list where an object belongs, ...), with its line."""

    def __init__(self, line: int | None, exc: Exception) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.line = line


def spans_from_documents(
    documents: list[tuple[int | None, dict[str, Any]]], parsed: Parsed
) -> dict[tuple[str, str], Span]:
    """The spans of OTLP JSON documents (resourceSpans and resourceLogs), by (trace id, span id); a log
    record becomes an event of its span (a span of its own, without attributes, when the span is absent).
    A document of the wrong shape raises ShapeError (a ValueError) naming its line."""
    spans: dict[tuple[str, str], Span] = {}
    logs: list[tuple[str, str, int, str, dict[str, Any]]] = []
    for line, doc in documents:
        try:
            _document_spans(doc, line, parsed, spans, logs)
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise ShapeError(line, exc) from None
    for trace_id, span_id, time, name, attrs in logs:
        if (trace_id, span_id) not in spans:
            spans[(trace_id, span_id)] = Span(trace_id, span_id, time, time, {}, {}, None)
        spans[(trace_id, span_id)].events.append((name, time, attrs))
    return spans


def _document_spans(
    doc: dict[str, Any],
    line: int | None,
    parsed: Parsed,
    spans: dict[tuple[str, str], Span],
    logs: list[tuple[str, str, int, str, dict[str, Any]]],
) -> None:
    """One OTLP document's spans into `spans`, its log records into `logs`."""
    for rs in doc.get("resourceSpans") or []:
        resource = attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []:
            for raw in ss.get("spans") or []:
                parsed.records += 1
                span = Span(
                    _hex_id(raw.get("traceId")),
                    _hex_id(raw.get("spanId")),
                    int(raw.get("startTimeUnixNano") or 0),
                    int(raw.get("endTimeUnixNano") or raw.get("startTimeUnixNano") or 0),
                    attributes(raw.get("attributes")),
                    resource,
                    line,
                )
                status = raw.get("status") or {}
                if status.get("code") in ("STATUS_CODE_ERROR", 2):
                    span.error = str(status.get("message") or "the LLM call failed")
                for event in raw.get("events") or []:
                    span.events.append(
                        (
                            event.get("name", ""),
                            int(event.get("timeUnixNano") or 0),
                            attributes(event.get("attributes")),
                        )
                    )
                spans[span.ref] = span
    for rl in doc.get("resourceLogs") or []:
        for sl in rl.get("scopeLogs") or []:
            for raw in sl.get("logRecords") or []:
                attrs = attributes(raw.get("attributes"))
                name = raw.get("eventName") or attrs.get("event.name") or ""
                body = any_value(raw.get("body"))
                if isinstance(body, dict):
                    attrs = {**attrs, "__body__": body}
                logs.append(
                    (
                        _hex_id(raw.get("traceId")),
                        _hex_id(raw.get("spanId")),
                        int(raw.get("timeUnixNano") or 0),
                        name,
                        attrs,
                    )
                )


def _time(nanos: int) -> datetime | None:
    return datetime.fromtimestamp(nanos / 1e9, UTC) if nanos else None


def _event_body(attrs: dict[str, Any]) -> dict[str, Any]:
    body = attrs.get("__body__")
    if isinstance(body, dict):
        return body
    content = attrs.get("gen_ai.event.content")
    if isinstance(content, str):
        try:
            decoded = json.loads(content)
            if isinstance(decoded, dict):
                return decoded
        except json.JSONDecodeError:
            pass
    return attrs


def span_messages(span: Span) -> tuple[list[Message], list[Message], list[str]]:
    """A span's (input, output, system texts); raises ValueError on a malformed attribute."""
    sources = [span.attributes] + [attrs for name, _, attrs in span.events if name == DETAILS_EVENT]
    inputs, outputs = indexed_messages(span.attributes)
    system: list[str] = []
    for attrs in sources:
        if genai.INPUT in attrs:
            inputs += genai.messages_from_json(attrs[genai.INPUT], genai.INPUT)
        if genai.OUTPUT in attrs:
            outputs += genai.messages_from_json(attrs[genai.OUTPUT], genai.OUTPUT)
        if genai.SYSTEM in attrs:
            system += genai.system_texts(attrs[genai.SYSTEM], genai.SYSTEM)
    for name, _, attrs in sorted(span.events, key=lambda e: e[1]):
        if name in genai.OLD_EVENTS:
            message, is_output = genai.event_message(name, _event_body(attrs))
            (outputs if is_output else inputs).append(message)
    system += [t for m in inputs if m.role == "system" for p in m.parts if (t := p.get("content"))]
    inputs = [m for m in inputs if m.role != "system"]
    return inputs, outputs, system


def stitch(keys: list[str], new: list[Message]) -> int:
    """How many leading messages of `new` are already held (`keys`: the held messages' keys): its longest
    overlap with the end of what is held (the repeated history), or all of it when it is a prefix."""
    new_keys = [message_key(m) for m in new]
    if len(new_keys) <= len(keys) and keys[: len(new_keys)] == new_keys:
        return len(
            new
        )  # an earlier part of the history, already held (a span that started before its parent)
    for k in range(min(len(keys), len(new_keys)), 0, -1):
        if keys[len(keys) - k :] == new_keys[:k]:
            return k
    return 0


def _keys(spans: list[Span], key_attr: str | None) -> dict[tuple[str, str], str]:
    """Each span's conversation key: its attribute (or its resource's), else its trace's, else the trace id."""
    own = {s.ref: own_key(s, key_attr) for s in spans}
    by_trace: dict[str, str] = {}
    for span in sorted(spans, key=lambda s: s.start):
        if own[span.ref] is not None:
            by_trace.setdefault(span.trace_id, str(own[span.ref]))
    return {
        s.ref: str(own[s.ref] if own[s.ref] is not None else by_trace.get(s.trace_id, s.trace_id))
        for s in spans
    }


def own_key(span: Span, key_attr: str | None) -> Any:
    """The conversation key a span (or its resource) carries itself, or None."""
    for attr in (key_attr,) if key_attr else CONVERSATION_KEYS:
        value = span.attributes.get(attr, span.resource.get(attr))
        if value is not None:
            return value
    return None


def _model(span: Span) -> str | None:
    attrs = span.attributes
    model = (
        attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
    )
    if not model:
        return None
    provider = attrs.get("gen_ai.provider.name") or attrs.get("gen_ai.system") or attrs.get("llm.provider")
    return f"{provider}:{model}" if provider else str(model)


def read_otlp(path: Path, key_attr: str | None = None) -> Parsed:
    """Every conversation in an OTLP JSON file, stitched and de-duplicated; bad spans reported and skipped."""
    parsed = Parsed([])
    spans = _spans(path, parsed)
    _check_key(path, spans, key_attr)
    found = conversations_from_spans(spans, _keys(spans, key_attr), str(path), parsed)
    if spans and not found.conversations:
        raise _no_messages(path, len(spans), found.silent)
    return found


def conversations_from_spans(
    spans: list[Span], keys: dict[tuple[str, str], str], where: str, parsed: Parsed
) -> Parsed:
    """The conversations of spans (each span's conversation key in `keys`), stitched in time order and
    de-duplicated; a malformed span is a problem of `parsed` and skipped. `silent` on the result counts
    the GenAI-call spans that held no messages (content capture off)."""
    conversations: dict[str, Conversation] = {}
    held: dict[str, list[str]] = {}  # each conversation's message keys, kept as it grows
    silent = 0  # LLM-call spans without their messages
    tools: dict[str, list[ToolSpan]] = {}  # each conversation's execute_tool spans (traces/tool_spans.py)
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if is_tool_span(span.attributes):
            tools.setdefault(keys[span.ref], []).append(
                tool_span(span.attributes, span.start, span.end, span.error)
            )
            continue
        try:
            inputs, outputs, system = span_messages(span)
        except ValueError as exc:
            parsed.problems.append(SkippedRecord(where, span.line, f"span {span.span_id}: {exc}"))
            continue
        if not inputs and not outputs:
            silent += _is_llm_call(span)
            continue  # not an LLM call (an agent, HTTP or tool span), or one recorded without its content
        conversation = conversations.setdefault(keys[span.ref], Conversation(keys[span.ref], where=where))
        for text in system:
            if text not in conversation.system:
                conversation.system.append(text)
        model = _model(span)
        if model and model not in conversation.models:
            conversation.models.append(model)
        messages = inputs + outputs
        seen = held.setdefault(conversation.key, [])
        skip = stitch(seen, messages)
        for position in range(skip, len(messages)):
            reply = position >= len(inputs)
            messages[position].time = _time(span.end if reply else span.start)
            if reply and span.end > span.start:
                messages[position].latency_s = (span.end - span.start) / 1e9  # the call's duration
        conversation.messages += messages[skip:]
        # The conversation ended in an error when its last LLM call failed (a failed call then retried
        # successfully is not the end).
        conversation.error = span.error
        conversation.stop_reason = "error" if span.error else None
        seen += [message_key(m) for m in messages[skip:]]
    for key, found in tools.items():
        if key in conversations:
            conversations[key].tools = found
    return Parsed(list(conversations.values()), parsed.problems, parsed.records, silent=silent)


def _is_llm_call(span: Span) -> bool:
    return any(key.startswith("gen_ai.") for key in span.attributes)


def _no_messages(path: Path, spans: int, silent: int) -> UserError:
    """Spans but no conversation: almost always content capture off, or the messages in another file."""
    return UserError(
        f"{path}: {spans} spans, {silent} of them GenAI calls, but none holds the messages (imported 0 "
        "conversations). The official instrumentation records no message content by default: set "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true and export again; or, when the messages "
        "went to a separate logs file, import both together (cat traces.jsonl logs.jsonl > both.jsonl)"
    )


def _check_key(path: Path, spans: list[Span], key_attr: str | None) -> None:
    """`--conversation-key` must name an attribute some span (or its resource) has: otherwise every span
    would silently fall back to its trace id."""
    if not key_attr or not spans:
        return
    if any(key_attr in s.attributes or key_attr in s.resource for s in spans):
        return
    seen = sorted(
        {k for s in spans for k in (*s.attributes, *s.resource) if not k.startswith("gen_ai.input")}
    )
    raise UserError(
        f"--conversation-key {key_attr}: no span or resource in {path} has this attribute; attributes seen: "
        f"{', '.join(seen[:12]) or 'none'}"
    )
