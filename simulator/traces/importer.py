"""`simulator import`: a trace or transcript file into an ordinary run folder (manifest kind `imported`),
redacted before anything is written, so judge, report, show, compare, labels and calibrate work on it."""

from __future__ import annotations

__all__ = ["ImportOptions", "import_source"]

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.errors import UserError
from simulator.plural import plural
from simulator.readers import unreadable_line
from simulator.record.folder import RunFolder, simulator_commit
from simulator.record.hashing import sha256_file
from simulator.record.manifest import Manifest, RoleModels, RunCounts, ScenarioEntry, Session
from simulator.record.models import ConversationRecord
from simulator.safefiles import WAITS, FileRefused, open_regular
from simulator.traces.mapping import Mapping, load_mapping
from simulator.traces.messages import Conversation, Parsed, SkippedRecord
from simulator.traces.pseudonym import KEY_BYTES, Pseudonyms, load_key
from simulator.traces.redact import Redactor, load_redactor

FORMATS = ("otel", "jsonl", "csv")
SNIFF_BYTES = 65536  # what `detect_format` reads of a file
CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # in no JSON text (tab, LF and CR are white space)
MAX_PROBLEMS_KEPT = 200


@dataclass
class ImportOptions:
    source: Path
    out: Path
    format: str | None = None  # None: from the file
    mapping: Path | None = None
    conversation_key: str | None = None
    redact: Path | None = None
    no_redact: bool = False
    exclude_system: bool = False
    suite: Path | None = None
    decision_tool: str = "record_decision"
    # otel: the span attribute holding the expected outcome level (collect's `--expected-attribute`).
    expected_attribute: str | None = None
    # the key of the conversation ids' pseudonyms (traces/pseudonym.py); None: a fresh key for this import
    pseudonym_key: Path | None = None


@dataclass
class ImportSummary:
    folder: Path
    format: str
    records: int
    conversations: int
    turns: int
    problems: list[SkippedRecord] = field(default_factory=list)  # records skipped
    skipped: list[SkippedRecord] = field(default_factory=list)  # conversations skipped
    redactions: dict[str, int] = field(default_factory=dict)
    silence: dict[str, int] = field(default_factory=dict)  # LLM calls without their messages, by the fix
    warnings: list[str] = field(default_factory=list)


def detect_format(path: Path) -> str:
    """`csv` by extension; `otel` when the file holds OTLP resource spans or logs; else `jsonl`."""
    if path.suffix.lower() == ".csv":
        return "csv"
    try:
        with open_regular(path) as handle:
            raw = handle.read(SNIFF_BYTES)
        if raw is None:
            raise FileRefused(WAITS)
    except FileRefused as exc:
        raise UserError(f"{path}: {exc}") from None
    _refuse_binary(path, raw)
    return "otel" if _first_document_is_otlp(raw.decode("utf-8", "replace")) else "jsonl"


_OTLP_KEYS = frozenset({"resourceSpans", "resourceLogs"})
_FIRST_KEY = re.compile(r'\s*\{\s*"((?:[^"\\]|\\.)*)"')


def _first_document_is_otlp(head: str) -> bool:
    """Whether the file's first JSON value is an OTLP export: its own keys decide, never the words
    `"resourceSpans"` anywhere in the head (a transcript file with one such line, or quoting it in a
    message, was taken for OTLP and refused whole). A first document longer than the head (a large
    pretty-printed export) is told by its first key."""
    text = head.lstrip("\ufeff \t\r\n")
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):  # cut at the head, not JSON, or nested past Python's stack
        first = _FIRST_KEY.match(text)
        return first is not None and first.group(1) in _OTLP_KEYS
    return isinstance(value, dict) and bool(_OTLP_KEYS & value.keys())


def _refuse_binary(path: Path, raw: bytes) -> None:
    """Binary data (OTLP protobuf above all) is said to be what it is, not read as lines of JSON. Told by
    share, not by one byte: binary when more than half the lines of the file's first 64 KiB are not text
    (not UTF-8, or holding control bytes no JSON text has; protobuf's 0x0a bytes cut it into short
    "lines", nearly all holding control bytes).
    A text file with a few damaged lines is read, and each of them skipped and named."""
    lines = raw.split(b"\n")
    if len(raw) >= SNIFF_BYTES and len(lines) > 1:
        lines.pop()  # cut by the window, perhaps in the middle of a character
    lines = [line for line in lines if line.strip()]
    unreadable = sum(1 for line in lines if CONTROL.search(line) or unreadable_line(line) is not None)
    if lines and unreadable * 2 > len(lines):
        raise UserError(
            f"{path}: binary data, not text (OTLP protobuf?); import reads OTLP JSON: export with "
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/json, or the collector's file exporter (format: json)"
        )


def _parse(options: ImportOptions, fmt: str, suite: Any) -> Parsed:
    mapping = load_mapping(options.mapping)
    if fmt == "otel":
        from simulator.traces.otlp import read_otlp

        return read_otlp(options.source, options.conversation_key, _otel_expected(options, mapping, suite))
    if options.expected_attribute is not None:
        raise UserError(
            f"--expected-attribute reads OTel span attributes; {options.source} is {fmt}: name the field "
            "holding the expected level in the mapping's `expected` (--mapping, docs/traces.md)"
        )
    from simulator.traces.plain import read_csv, read_jsonl

    if options.conversation_key:
        mapping.conversation = options.conversation_key
    return (read_csv if fmt == "csv" else read_jsonl)(options.source, mapping)


def _otel_expected(options: ImportOptions, mapping: Mapping, suite: Any) -> dict[str, str]:
    """{expected key: span attribute} for an OTel file: `--expected-attribute` for the suite's outcome key
    (as `simulator collect` reads it), and a mapping's `expected: {key: attribute}` (its flat form)."""
    found = dict(mapping.expected) if options.mapping and isinstance(mapping.expected, dict) else {}
    if options.expected_attribute is None:
        return found
    if suite is None or suite.outcome is None:
        raise UserError(
            f"--expected-attribute {options.expected_attribute}: needs --suite with `outcome:` (its key "
            "names what the attribute holds); or map it in --mapping as `expected: {KEY: ATTRIBUTE}`"
        )
    found[suite.outcome.key] = options.expected_attribute
    return found


def _redacted(conversation: Conversation, pseudonyms: Pseudonyms, exclude_system: bool) -> Conversation:
    """A copy of the conversation with every string redacted (system instructions dropped if excluded);
    its key pseudonymised where redaction would change it, so two conversations never share one."""
    redactor = pseudonyms.redactor
    for message in conversation.messages:
        message.parts = redactor.value(message.parts)
    conversation.key = pseudonyms.of(conversation.key)
    conversation.system = [] if exclude_system else redactor.value(conversation.system)
    conversation.final_state = redactor.value(conversation.final_state)
    conversation.expected = redactor.value(conversation.expected)
    conversation.tags = redactor.value(conversation.tags)
    conversation.error = redactor.value(conversation.error)
    return conversation


def _suite_data(path: Path | None) -> tuple[Any, str | None, str | None]:
    if path is None:
        return None, None, None
    from simulator.config.suite import load_suite
    from simulator.record.redact import redacted_suite

    suite = redacted_suite(load_suite(path))
    suite.runs = 1  # one record per real conversation, whatever the suite asks of simulations
    return suite, str(path), sha256_file(path)


def import_source(options: ImportOptions) -> ImportSummary:
    """Read, redact, convert and write; return what was imported and what was skipped, and why."""
    fmt = _checked_format(options)
    redactor = load_redactor(options.redact, enabled=not options.no_redact)
    suite, suite_file, suite_hash = _suite_data(options.suite)
    try:
        parsed = _parse(options, fmt, suite)
    except UnicodeDecodeError as exc:
        raise UserError(f"{options.source}: not UTF-8 text (byte {exc.start}); export it as UTF-8") from None
    _spell_levels(suite, parsed)
    now = datetime.now(UTC)
    key = (
        os.urandom(KEY_BYTES)
        if options.pseudonym_key is None
        else load_key(options.pseudonym_key, create=False)
    )
    records, entries, skipped = _convert(parsed, Pseudonyms(redactor, key), options, now)
    problems = [SkippedRecord(p.file, p.line, redactor.text(p.reason)) for p in parsed.problems]
    if not records:  # nothing to write: a folder of no conversations would pass for an import
        first = f"; the first: {problems[0]}" if problems else ""
        raise UserError(
            f"{options.source}: no conversations to import ({parsed.records} {fmt} records, "
            f"{len(problems)} malformed, {plural(len(skipped), 'conversation')} skipped{first}); nothing was written. "
            "Check the file (and --format, --conversation-key)"
        )
    bots = sorted({r.bot for r in records}) or ["unknown"]
    manifest = Manifest(
        kind="imported",
        run_id=options.out.name,
        status="complete",
        created_at=now,
        ended_at=datetime.now(UTC),
        git_commit=simulator_commit(),
        suite_file=suite_file,
        suite_hash=suite_hash,
        suite=suite,
        models=RoleModels(user="real", bot=", ".join(bots)),
        scenarios=entries,
        planned=len(records),
        counts=RunCounts(
            conversations=len(records), stop_reasons=dict(Counter(r.stop_reason for r in records))
        ),
        sessions=[Session(command="import", started_at=now, ended_at=datetime.now(UTC))],
        source=_source(options, fmt, redactor, parsed, problems, skipped),
    )
    folder = RunFolder.create(options.out, manifest)
    for record in records:
        folder.append_conversation(record)
    return ImportSummary(
        folder=options.out,
        format=fmt,
        records=parsed.records,
        conversations=len(records),
        turns=sum(len(r.turns) for r in records),
        problems=problems,
        skipped=skipped,
        redactions=dict(redactor.counts),
        silence=dict(parsed.silence.most_common()),
        warnings=_not_levels(suite, entries),
    )


def _spell_levels(suite: Any, parsed: Parsed) -> None:
    """An expected level written in another case or with spaces (`GP `) spelt as the suite spells it, as
    the outcome check and collect's live rates compare (case and spaces aside)."""
    outcome = suite.outcome if suite is not None else None
    if outcome is None:
        return
    spelt = {level.casefold(): level for level in outcome.levels}
    for conversation in parsed.conversations:
        value = conversation.expected.get(outcome.key)
        if isinstance(value, str) and value.strip().casefold() in spelt:
            conversation.expected[outcome.key] = spelt[value.strip().casefold()]


def _not_levels(suite: Any, entries: list[ScenarioEntry]) -> list[str]:
    """Expected outcome values that are none of the suite's levels (a trace's own words, `routine`): they
    are left out of under- and over-triage like collect's, and the import says so, naming them."""
    outcome = suite.outcome if suite is not None else None
    if outcome is None:
        return []
    levels = {level.casefold() for level in outcome.levels}
    odd = [
        (entry.id, entry.expected[outcome.key])
        for entry in entries
        if outcome.key in entry.expected and str(entry.expected[outcome.key]).strip().casefold() not in levels
    ]
    if not odd:
        return []
    named = ", ".join(f"{cid} ({value!r})" for cid, value in odd[:5])
    return [
        f"{plural(len(odd), 'conversation')} carry an expected {outcome.key} that is not an outcome level ({named}); "
        f"they are left out of under- and over-triage. Levels: {', '.join(outcome.levels)}"
    ]


def _checked_format(options: ImportOptions) -> str:
    """The source's format, after checking the output folder is new and the source exists."""
    if options.out.exists() and (not options.out.is_dir() or any(options.out.iterdir())):
        raise UserError(f"--out {options.out}: already exists and is not empty; name a new run folder")
    if not options.source.exists() and not options.source.is_symlink():
        raise UserError(f"{options.source}: no such file; pass an OTLP JSON, JSONL or CSV file")
    # Anything else that is there (a folder, a FIFO, a device, a link loop) is refused by the bounded
    # reader, which says what it is.
    fmt = options.format or detect_format(options.source)
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt}: not a known format; use one of {', '.join(FORMATS)}")
    return fmt


def _convert(
    parsed: Parsed, pseudonyms: Pseudonyms, options: ImportOptions, now: datetime
) -> tuple[list[ConversationRecord], list[ScenarioEntry], list[SkippedRecord]]:
    """Each parsed conversation, redacted, as a record and a scenario entry; or skipped, with the reason."""
    from simulator.traces.records import ConvertOptions, record_ids, to_record

    convert = ConvertOptions(
        now=now, exclude_system=options.exclude_system, decision_tool=options.decision_tool
    )
    records: list[ConversationRecord] = []
    entries: list[ScenarioEntry] = []
    skipped: list[SkippedRecord] = []
    taken: set[str] = set()  # scenario ids
    kept: set[str] = set()  # record ids
    for conversation in parsed.conversations:
        conversation = _redacted(conversation, pseudonyms, options.exclude_system)
        scenario_id, repeat = record_ids(conversation.key, taken, kept)
        try:
            record = to_record(conversation, scenario_id, convert, repeat)
        except ValueError as exc:
            file, _, line = conversation.where.rpartition(":")
            where = (file, int(line)) if line.isdigit() else (conversation.where, None)
            skipped.append(
                SkippedRecord(where[0], where[1], f"conversation '{conversation.key}' skipped: {exc}")
            )
            continue
        records.append(record)
        if all(entry.id != scenario_id for entry in entries):  # repeats of one scenario share its entry
            entries.append(
                ScenarioEntry(id=scenario_id, expected=conversation.expected, tags=conversation.tags)
            )
    return records, entries, skipped


def _source(
    options: ImportOptions,
    fmt: str,
    redactor: Redactor,
    parsed: Parsed,
    problems: list[SkippedRecord],
    skipped: list[SkippedRecord],
) -> dict[str, Any]:
    """The manifest's `source`: where the conversations came from, how they were read and redacted, and
    the records (`problems`) and conversations (`skipped`) left out, and why."""
    return {
        "file": str(options.source),
        "sha256": sha256_file(options.source),
        "format": fmt,
        "conversation_key": options.conversation_key,
        "mapping": str(options.mapping) if options.mapping else None,
        "expected_attribute": options.expected_attribute,
        "exclude_system": options.exclude_system,
        "redaction": "off" if options.no_redact else str(options.redact or "built-in patterns"),
        "redacted": dict(redactor.counts),
        "records": parsed.records,
        "records_skipped": len(problems),
        "conversations_skipped": len(skipped),
        "llm_calls_without_messages": dict(parsed.silence),
        "problems": [str(p) for p in (problems + skipped)[:MAX_PROBLEMS_KEPT]],
    }
