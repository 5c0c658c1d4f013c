"""Plain transcripts: JSON lines (one conversation per line, or one message per line) and CSV (one message
per row), with field names from a `Mapping`. A bad record is reported (file, line, reason) and skipped."""

from __future__ import annotations

__all__ = ["read_csv", "read_jsonl"]

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.readers import MAX_IMPORT_BYTES, text_lines
from simulator.readers import read_csv as read_sheet
from simulator.traces.genai import parts_from_content
from simulator.traces.mapping import Mapping
from simulator.traces.messages import Conversation, Message, Parsed, SkippedRecord


def _time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        if isinstance(value, int | float):
            return datetime.fromtimestamp(float(value), UTC)
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"'{value}' is not a time (ISO 8601 or Unix seconds)") from None


def _message(raw: Any, mapping: Mapping) -> Message:
    if not isinstance(raw, dict):
        raise ValueError("a message must be an object")
    role = mapping.role_of(raw.get(mapping.role))
    if role is None:
        names = ", ".join(n for names in mapping.roles.values() for n in names)
        raise ValueError(f"field '{mapping.role}' is missing or not a known role ({names})")
    if mapping.text not in raw:
        raise ValueError(f"field '{mapping.text}' (the message text) is missing")
    return Message(role, parts_from_content(raw[mapping.text]), _time(raw.get(mapping.time)))


def _fields(row: dict[str, Any], spec: str | dict[str, str]) -> dict[str, Any]:
    if isinstance(spec, str):
        value = row.get(spec)
        if value in (None, ""):
            return {}
        if isinstance(value, str):
            try:
                value = loads_bounded(value, f"field '{spec}'")
            except JSONRefused as exc:
                raise ValueError(f"{exc}; it must be a JSON object") from None
        if not isinstance(value, dict):
            raise ValueError(f"field '{spec}' must be an object")
        return value
    return {key: row[name] for key, name in spec.items() if row.get(name) not in (None, "")}


def _details(conversation: Conversation, row: dict[str, Any], mapping: Mapping) -> None:
    """Conversation-level fields (expected, final state, tags, model, stop reason) from any record."""
    conversation.expected.update(_fields(row, mapping.expected))
    final = _fields(row, mapping.final_state)
    if final:
        conversation.final_state = {**(conversation.final_state or {}), **final}
    tags = row.get(mapping.tags)
    if isinstance(tags, str) and tags:
        tags = [t.strip() for t in tags.split(",") if t.strip()]
    if isinstance(tags, list):
        conversation.tags += [str(t) for t in tags if str(t) not in conversation.tags]
    if row.get(mapping.model) and str(row[mapping.model]) not in conversation.models:
        conversation.models.append(str(row[mapping.model]))
    if row.get(mapping.stop_reason):
        conversation.stop_reason = str(row[mapping.stop_reason])


def _add(found: dict[str, Conversation], row: dict[str, Any], mapping: Mapping, where: str) -> None:
    """One record (a whole conversation, or one message) into `found`; ValueError when it is malformed."""
    key = row.get(mapping.conversation)
    whole = mapping.messages in row
    if key in (None, "") and not whole:
        raise ValueError(f"field '{mapping.conversation}' (the conversation id) is missing")
    key = str(key) if key not in (None, "") else f"line-{where.rsplit(':', 1)[-1]}"
    if whole:
        if not isinstance(row[mapping.messages], list):
            raise ValueError(f"field '{mapping.messages}' must be a list of messages")
        messages = []
        for number, raw in enumerate(row[mapping.messages]):
            try:
                messages.append(_message(raw, mapping))
            except ValueError as exc:
                raise ValueError(f"{mapping.messages}[{number}]: {exc}") from None
        if key in found:
            raise ValueError(f"conversation '{key}' appears twice")
        conversation = Conversation(key, messages, where=where)
    else:
        message = _message(row, mapping)
        conversation = found.get(key) or Conversation(key, where=where)
        conversation.messages.append(message)
    _details(conversation, row, mapping)
    found[key] = conversation


def _finish(found: dict[str, Conversation], parsed: Parsed) -> Parsed:
    for conversation in found.values():
        for message in conversation.messages:
            if message.role == "system":
                conversation.system += [p["content"] for p in message.parts if p.get("content")]
        conversation.messages = [m for m in conversation.messages if m.role != "system"]
        if any(m.time is not None for m in conversation.messages):
            # Stable: messages without a time keep their place relative to their neighbours.
            earliest = datetime.min.replace(tzinfo=UTC)
            conversation.messages.sort(key=lambda m: m.time or earliest)
    parsed.conversations = list(found.values())
    return parsed


def read_jsonl(path: Path, mapping: Mapping) -> Parsed:
    """Conversations from a JSON-lines transcript file, read by the one bounded reader (a regular file of at
    most MAX_IMPORT_BYTES, as a CSV or OTLP file, lines of at most MAX_LINE_BYTES; each record bounded
    JSON). A line that is not UTF-8 is skipped and named, as a line that is not JSON is."""
    parsed = Parsed([])
    found: dict[str, Conversation] = {}
    advice = "split it into several files and import each into its own run folder"

    def unreadable(number: int, why: str) -> None:  # one line not UTF-8: skipped and named, the rest read
        parsed.records += 1
        parsed.problems.append(SkippedRecord(str(path), number, why))

    lines = text_lines(
        path, save_as="UTF-8 JSON lines", max_total=MAX_IMPORT_BYTES, advice=advice, skip=unreadable
    )
    for number, line in lines:
        parsed.records += 1
        try:
            row = loads_bounded(line, "the record")
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            _add(found, row, mapping, f"{path}:{number}")
        except ValueError as exc:  # JSONRefused included: one record, skipped and named; the rest imports
            parsed.problems.append(
                SkippedRecord(str(path), number, str(exc).removeprefix("the record ").removeprefix("is "))
            )
        except RecursionError:
            parsed.problems.append(SkippedRecord(str(path), number, "nested too deeply to read"))
    return _finish(found, parsed)


def read_csv(path: Path, mapping: Mapping) -> Parsed:
    """Conversations from a CSV file with a header row, one message per row (the one bounded CSV reader)."""
    parsed = Parsed([])
    found: dict[str, Conversation] = {}
    for number, row in read_sheet(path, MAX_IMPORT_BYTES).dicts():
        parsed.records += 1
        if None in row:
            parsed.problems.append(SkippedRecord(str(path), number, "more cells than header columns"))
            continue
        try:
            _add(found, row, mapping, f"{path}:{number}")
        except ValueError as exc:
            parsed.problems.append(SkippedRecord(str(path), number, str(exc)))
    return _finish(found, parsed)
