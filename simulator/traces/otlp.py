"""Read OTLP JSON traces (as the OpenTelemetry Collector's file exporter writes them) into conversations.

A file is one `{"resourceSpans": [...]}` object, JSON lines of them, or several documents one after another
(`resourceLogs` too: log-based GenAI events are attached to their span); every span is checked by the one
decoder (otlp_decode.py). Spans are grouped into conversations by `gen_ai.conversation.id`
(or another attribute, or the trace id), ordered by start time, and de-duplicated: each LLM call repeats
the history in its input, so a span adds only the messages that follow the longest overlap with what the
conversation already holds.
"""

from __future__ import annotations

__all__ = ["Span", "conversations_from_spans", "expected_level", "own_key", "read_otlp"]

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.errors import UserError, decode_error_in_words
from simulator.jsonbounds import DECODER, JSONRefused, Unrepresentable, loads_bounded
from simulator.readers import MAX_IMPORT_BYTES, read_text_of_lines
from simulator.traces import genai
from simulator.traces.content import hidden_content, is_llm_call, silence_hint
from simulator.traces.indexed import indexed_messages
from simulator.traces.messages import Conversation, Message, Parsed, SkippedRecord, ToolSpan, message_key
from simulator.traces.otlp_decode import ShapeError, Span, decode_documents
from simulator.traces.tool_spans import is_tool_span, tool_span

CONVERSATION_ID = "gen_ai.conversation.id"
# Tried in order when no --conversation-key is given: the GenAI conventions', then OpenInference's session.
CONVERSATION_KEYS = (CONVERSATION_ID, "session.id")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_BLANK = re.compile(r"\s*")


def _documents(path: Path, parsed: Parsed) -> list[tuple[int | None, Any]]:
    """The file's OTLP documents, each with its first line: one JSON document, JSON lines (the file
    exporters'), or documents simply concatenated (`cat a.json b.json`, pretty-printed or not). A line of
    JSON lines that is not JSON is a problem of its own; a document cut short, or a document that is not
    JSON, is one clear error, never hundreds of skipped "lines"."""
    text, unreadable = read_text_of_lines(
        path, MAX_IMPORT_BYTES, "split the export into several files", "UTF-8 OTLP JSON"
    )
    parsed.problems += [SkippedRecord(str(path), number, why) for number, why in unreadable]
    # A line left out inside one document breaks it: its error says so.
    left_out = f"; line {unreadable[0][0]} was left out: {unreadable[0][1]}" if unreadable else ""
    decoder = DECODER
    docs: list[tuple[int | None, Any]] = []
    position, line = 0, 1
    while True:
        blank = _skip_blank(text, position)
        line += text.count("\n", position, blank)
        position = blank
        if position >= len(text):
            break
        end_of_line = text.find("\n", position)
        end_of_line = len(text) if end_of_line < 0 else end_of_line
        try:
            doc, after = decoder.raw_decode(text, position)
        except RecursionError:
            raise UserError(f"{path}:{line}: nested too deeply to read; this is not an OTLP export") from None
        except Unrepresentable as exc:
            where = text.count("\n", 0, position) + 1
            raise UserError(f"{path}:{where}: the document {exc}") from None
        except json.JSONDecodeError as exc:
            if exc.pos <= end_of_line and (docs or _next_is_json_line(text, end_of_line)):
                parsed.problems.append(
                    SkippedRecord(str(path), line, f"not JSON ({decode_error_in_words(exc)})")
                )
                line += 1
                position = end_of_line + 1
                continue
            cut = (
                "it ends in the middle of a document (cut short?)"
                if exc.pos >= len(text) - 1
                else decode_error_in_words(exc)
            )
            where = text.count("\n", 0, exc.pos) + 1
            raise UserError(
                f"{path}:{where}: not valid OTLP JSON ({cut}{left_out}); export it again in full, as OTLP "
                "JSON (one document, one per line, or several one after another)"
            ) from None
        for item in doc if isinstance(doc, list) else [doc]:
            if isinstance(item, dict):
                docs.append((line, item))
            else:
                parsed.problems.append(SkippedRecord(str(path), line, "not a JSON object of resourceSpans"))
        line += text.count("\n", position, after)
        position = after
    return docs


def _skip_blank(text: str, position: int) -> int:
    """The position of the first character at or after `position` that is not white space."""
    match = _BLANK.match(text, position)
    return match.end() if match else position


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(DECODER.decode(text), dict)
    except (ValueError, RecursionError):
        return False


def _next_is_json_line(text: str, end_of_line: int) -> bool:
    """Whether the next non-blank line is a whole JSON object: the file is JSON lines, one line is bad."""
    for following in text[end_of_line + 1 :].splitlines():
        if following.strip():
            return _is_json_object(following)
    return False


def _spans(path: Path, parsed: Parsed) -> list[Span]:
    """Every span (and log-record event) of the file; a malformed span or log record is a problem of its
    own (file:line: span id: the field and what is wrong), a document of the wrong shape one clear error."""
    try:
        decoded = decode_documents(_documents(path, parsed))
    except ShapeError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise UserError(
            f"{where}: not OTLP JSON of the expected shape (resourceSpans: [{{scopeSpans: [{{spans: "
            f"[...]}}]}}], each a list of objects; {exc})"
        ) from None
    parsed.records += decoded.span_records
    parsed.problems += [
        SkippedRecord(str(path), line, f"{reason}; skipped") for line, reason in decoded.rejected
    ]
    if not decoded.spans:
        if decoded.rejected:
            line, reason = decoded.rejected[0]
            raise UserError(
                f"{path}:{line}: none of its {len(decoded.rejected)} spans and log records has the expected "
                f"shape ({reason}); export it again with an OpenTelemetry SDK's OTLP JSON exporter"
            )
        raise UserError(
            f"{path}: holds no spans or log records (resourceSpans / resourceLogs); nothing to import"
        )
    return list(decoded.spans.values())


def _time(nanos: int) -> datetime | None:
    return datetime.fromtimestamp(nanos / 1e9, UTC) if nanos else None


def _event_body(attrs: dict[str, Any]) -> dict[str, Any]:
    body = attrs.get("__body__")
    if isinstance(body, dict):
        return body
    content = attrs.get("gen_ai.event.content")
    if isinstance(content, str):
        try:
            decoded = loads_bounded(content, "the event's content")
            if isinstance(decoded, dict):
                return decoded
        except JSONRefused:
            pass
    return attrs


def _sources(span: Span, history: genai.InputHistory) -> list[tuple[list[Message], list[Message], list[str]]]:
    """Each representation of the span's messages, in order of preference: the GenAI JSON attributes on
    the span, then on its `...operation.details` event(s), then indexed attributes (OpenInference,
    Traceloop), then the older per-message events. Each is (inputs, outputs, system texts); the inputs
    are read through the conversation's `history` (the calls before repeat most of them)."""
    found: list[tuple[list[Message], list[Message], list[str]]] = []
    for attrs in [span.attributes] + [a for name, _, a in span.events if name == DETAILS_EVENT]:
        found.append(
            (
                history.messages(attrs[genai.INPUT], genai.INPUT) if genai.INPUT in attrs else [],
                genai.messages_from_json(attrs[genai.OUTPUT], genai.OUTPUT) if genai.OUTPUT in attrs else [],
                genai.system_texts(attrs[genai.SYSTEM], genai.SYSTEM) if genai.SYSTEM in attrs else [],
            )
        )
    found.append((*indexed_messages(span.attributes), []))
    old: tuple[list[Message], list[Message], list[str]] = ([], [], [])
    for name, _, attrs in sorted(span.events, key=lambda e: e[1]):
        if name in genai.OLD_EVENTS:
            message, is_output = genai.event_message(name, _event_body(attrs))
            (old[1] if is_output else old[0]).append(message)
    found.append(old)
    return found


def span_messages(
    span: Span, history: genai.InputHistory | None = None
) -> tuple[list[Message], list[Message], list[str]]:
    """A span's (input, output, system texts); raises ValueError on a malformed attribute. `history`: its
    conversation's, kept across its spans in time order (`genai.InputHistory`), so each parses only its new
    input messages.

    One call's messages are often recorded twice: on the span and in its log event (openai-v2's
    span_and_event), or as OpenInference's indexed attributes and the GenAI JSON ones (OpenInference with
    its GenAI conventions on). Each side is taken from one representation only, the first that holds it,
    so a call is one turn however many times it was recorded."""
    sources = _sources(span, history if history is not None else genai.InputHistory())
    inputs = next((found[0] for found in sources if found[0]), [])
    outputs = next((found[1] for found in sources if found[1]), [])
    system = next((found[2] for found in sources if found[2]), [])
    system = system + [t for m in inputs if m.role == "system" for p in m.parts if (t := p.get("content"))]
    inputs = [m for m in inputs if m.role != "system"]
    return inputs, outputs, system


class _Keys:
    """`message_key` of each message, remembered by its parts list while one set of spans is read: the calls
    of a conversation share the parts of the history each repeats (genai.InputHistory), so each message's
    key is made once, not once for every later call (the parts are not changed while they are read; this
    holds each list, so its id is not another's)."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int], tuple[list[Any], str]] = {}

    def __call__(self, message: Message) -> str:
        found = self._known.get((message.role, id(message.parts)))
        if found is not None and found[0] is message.parts:
            return found[1]
        key = message_key(message)
        self._known[(message.role, id(message.parts))] = (message.parts, key)
        return key


def stitch(keys: list[str], new: list[Message], key: Callable[[Message], str] = message_key) -> int:
    """How many leading messages of `new` are already held (`keys`: the held messages' keys, each `key` of
    its message): its longest overlap with the end of what is held (the repeated history), or all of it when
    it is a prefix."""
    new_keys = [key(m) for m in new]
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


def expected_level(spans: list[Span], attribute: str) -> str | None:
    """The expected level a conversation's spans carry (`--expected-attribute`, for `collect` and `import`
    alike): the attribute on the latest span (or its resource) that has it, stripped; None when none has."""
    for span in sorted(spans, key=lambda s: s.end, reverse=True):
        value = span.attributes.get(attribute, span.resource.get(attribute))
        if value is not None and str(value).strip():
            return str(value).strip()
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


def read_otlp(path: Path, key_attr: str | None = None, expected: dict[str, str] | None = None) -> Parsed:
    """Every conversation in an OTLP JSON file, stitched and de-duplicated; bad spans reported and skipped.
    `expected` ({outcome key: span attribute}) gives each conversation the expected values its spans carry."""
    parsed = Parsed([])
    spans = _spans(path, parsed)
    _check_key(path, spans, key_attr)
    keys = _keys(spans, key_attr)
    found = conversations_from_spans(spans, keys, str(path), parsed)
    if spans and not found.conversations:
        raise _no_messages(path, len(spans), found.silence)
    if expected:
        _read_expected(path, spans, keys, found, expected)
    return found


def _read_expected(
    path: Path, spans: list[Span], keys: dict[tuple[str, str], str], found: Parsed, expected: dict[str, str]
) -> None:
    """Each conversation's expected values from its spans' attributes. An attribute no span has at all is
    a one-line error (a misspelt name would otherwise leave every conversation without an expected level)."""
    for attribute in expected.values():
        if not any(attribute in s.attributes or attribute in s.resource for s in spans):
            raise UserError(
                f"--expected-attribute {attribute}: no span or resource in {path} has this attribute; "
                "name the attribute your service writes the expected level to"
            )
    by_key: dict[str, list[Span]] = {}
    for span in spans:
        by_key.setdefault(keys[span.ref], []).append(span)
    for conversation in found.conversations:
        for key, attribute in expected.items():
            value = expected_level(by_key.get(conversation.key, []), attribute)
            if value is not None:
                conversation.expected[key] = value


def conversations_from_spans(
    spans: list[Span], keys: dict[tuple[str, str], str], where: str, parsed: Parsed
) -> Parsed:
    """The conversations of spans (each span's conversation key in `keys`), stitched in time order and
    de-duplicated; a malformed span is a problem of `parsed` and skipped. `silence` on the result counts
    the LLM-call spans that held no usable messages (content capture off, or hidden), by the fix."""
    conversations: dict[str, Conversation] = {}
    held: dict[str, list[str]] = {}  # each conversation's message keys, kept as it grows
    silence: Counter[str] = Counter()  # LLM-call spans without their messages, by the fix
    tools: dict[str, list[ToolSpan]] = {}  # each conversation's execute_tool spans (traces/tool_spans.py)
    histories: dict[
        str, genai.InputHistory
    ] = {}  # each conversation's last input, parsed (genai.InputHistory)
    key_of = _Keys()
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if is_tool_span(span.attributes):
            tools.setdefault(keys[span.ref], []).append(
                tool_span(span.attributes, span.start, span.end, span.error)
            )
            continue
        try:
            inputs, outputs, system = span_messages(
                span, histories.setdefault(keys[span.ref], genai.InputHistory())
            )
        except ValueError as exc:
            parsed.problems.append(SkippedRecord(where, span.line, f"span {span.span_id}: {exc}"))
            continue
        hidden = hidden_content(span.attributes, inputs, outputs, span.error is not None)
        if hidden is not None or (not inputs and not outputs):
            if is_llm_call(span.attributes):
                silence[silence_hint(span.scope, hidden)] += 1
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
        skip = stitch(seen, messages, key_of)
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
        seen += [key_of(m) for m in messages[skip:]]
    for key, found in tools.items():
        if key in conversations:
            conversations[key].tools = found
    return Parsed(list(conversations.values()), parsed.problems, parsed.records, silence=silence)


def _no_messages(path: Path, spans: int, silence: Counter[str]) -> UserError:
    """Spans but no conversation: almost always content capture off (or hidden), or the messages in
    another file; the fix is named as the instrumentation that made the spans takes it."""
    fixes = "; or ".join(h for h, _ in silence.most_common()) if silence else silence_hint(("", ""), None)
    return UserError(
        f"{path}: {spans} spans, {sum(silence.values())} of them LLM calls, but none holds the messages "
        f"(imported 0 conversations). Instrumentations record no message content by default: {fixes}"
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
