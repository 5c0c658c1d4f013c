"""The run folder, `runs/<id>/`: a manifest written first and JSON lines appended as work finishes.

Every record passes through here: typed appends for writers, migrating readers that never modify a file.
"""

from __future__ import annotations

__all__ = [
    "CONVERSATIONS",
    "LABELS",
    "MANIFEST",
    "VERDICTS",
    "RunFolder",
    "dump_line",
    "git_commit",
    "latest_by_id",
    "new_run_id",
    "read_jsonl",
    "simulator_commit",
    "torn_tail",
]

import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from simulator.diskerrors import naming
from simulator.errors import FolderTaken, UserError, decode_error_in_words, option_forms
from simulator.jsonbounds import DECODER, Unrepresentable, text_depth
from simulator.readers import missing, read_json
from simulator.record.manifest import SCHEMA_VERSION, Manifest
from simulator.record.migrations import (
    DAMAGED,
    golden_manifest_1_to_2,
    golden_result_1_to_2,
    golden_v1_checked,
    migrate_conversation,
    migrate_manifest,
    migrate_verdict,
    refused,
)
from simulator.record.models import ConversationRecord, ErrorInfo, Label, Verdict
from simulator.record.redact import contains_secret, redact
from simulator.record.stored_turns import LineSource, StoredTurns, facts_of_turns
from simulator.record.transcript import TEXT_CHECKED, repair_text
from simulator.safefiles import FileRefused, open_regular, read_capped, replacing, write_atomic
from simulator.visible import echo

MANIFEST = "manifest.json"
CONVERSATIONS = "conversations.jsonl"
VERDICTS = "verdicts.jsonl"
LABELS = "labels.jsonl"
# What simulator 0.1's golden engine wrote instead of conversations and verdicts (read, never written).
GOLDEN_V1_RESULTS = "results.jsonl"
WRITER_LOCK = ".writer.lock"
# Writer locks this process holds, by folder: a run folder is written by one process at a time.
_HELD_LOCKS: dict[str, int] = {}

T = TypeVar("T", bound=BaseModel)
Migrate = Callable[[dict[str, Any], str], dict[str, Any]]
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_CURRENT_PREFIX = f'{{"schema_version":{SCHEMA_VERSION},'
# A JSON escape of a UTF-16 surrogate: the only way a line of UTF-8 text can carry a lone one (pydantic's
# JSON parser refuses a lone one today; checked anyway, so a change there can never skip the repair).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _git(cwd: Path | None, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def git_commit(cwd: Path | None = None) -> str | None:
    """The git commit of the checkout holding `cwd` (a suite's folder), when there is one."""
    return _git(cwd, "rev-parse", "HEAD")


_PACKAGE = Path(__file__).resolve().parent.parent  # the simulator package's folder


def simulator_commit(package: Path = _PACKAGE) -> str | None:
    """The git commit of the simulator's own checkout (`package`: its folder); None when it is installed as
    a package (`package_version` says which then), even inside another project's checkout (untracked)."""
    if _git(package, "ls-files", "--error-unmatch", str(package / "__init__.py")) is None:
        return None
    return git_commit(package)


def new_run_id(name: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40]
    return f"{stamp}-{safe}-{secrets.token_hex(2)}"


# The most a manifest (or another small file of a run folder) and one record line may hold.
MAX_MANIFEST_BYTES = 64_000_000
MAX_RECORD_BYTES = 256_000_000
# Levels of nesting a record line may have: pydantic's JSON reader stops at about 200; a state or tool
# result is bounded at MAX_JSON_DEPTH where it enters, and a record adds a few levels around it.
MAX_RECORD_DEPTH = 128


def _read_small(path: Path, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """A run folder's file read whole: a regular file of at most `limit` bytes, else one clear error."""
    try:
        return read_capped(path, limit, "this is not a file simulator wrote, or it was damaged")
    except FileRefused as exc:
        raise UserError(f"{path}: {exc}") from None


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{where}: not UTF-8 text (byte {exc.start}); {DAMAGED}") from None


def _invalid(model: type[BaseModel], where: str, exc: ValidationError) -> UserError:
    return refused(where, exc, f"not a valid {model.__name__} record")


def _parse_line(text: str, model: type[T], migrate: Migrate, where: str) -> T:
    # Lines of the current version go straight to pydantic (the common, fast case); older ones are migrated.
    # A line holding a surrogate escape (`\ud800`, written by another program or an older version) is read
    # with `json` and its lone surrogates become U+FFFD: no reader (HTML, JSON, terminal) meets text UTF-8
    # cannot encode. A line without one cannot hold a lone surrogate: its text skips the repair pass.
    if text.startswith(_CURRENT_PREFIX) and not _SURROGATE_ESCAPE.search(text):
        context = TEXT_CHECKED
        try:
            return model.model_validate_json(text, context=context)
        except ValidationError as exc:
            raise _invalid(model, where, exc) from None
    try:
        raw = DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: not a JSON record ({decode_error_in_words(exc)}); {DAMAGED}") from None
    except Unrepresentable as exc:
        raise UserError(f"{where}: the record {exc}; {DAMAGED}") from None
    return _migrated(raw, model, migrate, where, "not a JSON object")


def _migrated(raw: Any, model: type[T], migrate: Migrate, where: str, not_an_object: str) -> T:
    """A parsed JSON value as `model`, migrated from its schema version first; one clear error if not."""
    if not isinstance(raw, dict):
        raise UserError(f"{where}: {not_an_object}; {DAMAGED}")
    clean = repair_text(raw)
    if clean != raw:
        _flag_repaired_turns(raw, clean)
    try:
        return model.model_validate(migrate(clean, where))
    except ValidationError as exc:
        raise _invalid(model, where, exc) from None


def _flag_repaired_turns(raw: dict[str, Any], clean: dict[str, Any]) -> None:
    """A turn whose text lost a lone surrogate says so (`text_repaired`), as the turns a run repairs do."""
    turns, cleaned = raw.get("turns"), clean.get("turns")
    if not isinstance(turns, list) or not isinstance(cleaned, list):
        return
    for before, after in zip(turns, cleaned, strict=False):
        if isinstance(after, dict) and before != after:
            after["text_repaired"] = True


def _no_migration(raw: dict[str, Any], where: str) -> dict[str, Any]:
    return raw


def read_jsonl(path: Path, model: type[T], migrate: Migrate | None = None) -> Iterator[T]:
    """Records of a JSON-lines file, migrated to the current schema in memory. A last line without its
    newline is a record still being written (or cut by a crash): it is skipped here, never repaired, so a
    reader can follow a run that is being written without touching its files."""
    if not path.exists():
        return
    if migrate is None:
        known: dict[type[BaseModel], Migrate] = {
            ConversationRecord: migrate_conversation,
            Verdict: migrate_verdict,
        }
        migrate = known.get(model, _no_migration)
    for _, _, number, text in _lines(path):
        where = f"{path}:{number}"
        record = _parse_or_skip(text, model, migrate, where)
        if record is not None:
            yield record


def _lines(path: Path, start: int = 0) -> Iterator[tuple[int, int, int, str]]:
    """(byte offset, byte length, line number, text) of each whole, non-blank line of a JSON-lines file,
    read from a regular file only and by at most MAX_RECORD_BYTES a line; a last line without its newline
    is skipped (see `read_jsonl`). From byte `start` (a line's first byte) when given: line numbers then
    count from there."""
    offset = start
    with _open_record_file(path) as handle:
        handle.seek(start)
        number = 0
        while line := handle.readline(MAX_RECORD_BYTES + 1):
            number += 1
            if len(line) > MAX_RECORD_BYTES:
                raise UserError(
                    f"{path}:{number}: a record longer than {MAX_RECORD_BYTES / 1e6:g} MB; this is not a file "
                    "simulator wrote, or it was damaged"
                )
            if not line.endswith(b"\n"):
                return
            if line.strip():
                yield offset, len(line), number, _decode(line, f"{path}:{number}")
            offset += len(line)


def _open_record_file(path: Path) -> BinaryIO:
    """A run-folder file opened for reading: a regular file only (a FIFO or a device is refused)."""
    try:
        return open_regular(path)
    except FileRefused as exc:
        raise UserError(f"{path}: {exc}") from None


def _parse_or_skip(text: str, model: type[T], migrate: Migrate, where: str) -> T | None:
    """One record; a record nested too deeply to read is skipped with a one-line note naming it, so one bad
    line never takes the whole command (or the desk's page) down with it."""
    try:
        return _parse_line(text, model, migrate, where)
    except RecursionError:
        pass
    except UserError as exc:
        if "recursion limit" not in str(exc):
            raise
    echo(f"note: {where}: a record nested too deeply to read; skipped", file=sys.stderr)
    return None


def dump_line(record: BaseModel, *, indent: int | None = None, exclude_none: bool = True) -> str:
    """`record` as JSON text ending in a newline, safe to write: the one place every record line passes.

    Any string Python can hold is recordable: text UTF-8 cannot encode (lone surrogates from a bot, a model or
    a file) becomes U+FFFD and the record says so (`text_repaired: true`), instead of one message stopping the
    run. And no registered secret is ever written: each is replaced by `[redacted]` (`record.redact`)."""
    try:
        text = record.model_dump_json(exclude_none=exclude_none, indent=indent)
        text.encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        if "depth" in str(exc):  # pydantic stops past its serialization depth: no reader could take it
            raise RecordRefused(
                f"{_name(record)}: a record nested more than {MAX_RECORD_DEPTH} levels deep, the most a reader "
                "takes, was not written"
            ) from None
        try:
            data = repair_text(record.model_dump(mode="python", exclude_none=exclude_none, by_alias=True))
            if "text_repaired" in type(record).model_fields:
                data["text_repaired"] = True
            repaired = type(record).model_validate(data)
            text = repaired.model_dump_json(exclude_none=exclude_none, indent=indent)
        except ValueError as again:  # not a lone surrogate: a value JSON has no form for (an object, a set)
            raise RecordUnwritable(
                f"{_name(record)}: a record holding a value that cannot be written as JSON "
                f"({str(again)[:200]}) was not written"
            ) from None
    if contains_secret(text):
        # Redacted in the parsed data, not the JSON text: a secret holding quotes or backslashes is escaped
        # there, and replacing inside JSON could break its structure.
        separators = (",", ": ") if indent is not None else (",", ":")
        text = json.dumps(redact(json.loads(text)), ensure_ascii=False, indent=indent, separators=separators)
    _check_readable(record, text, MAX_MANIFEST_BYTES if indent is not None else MAX_RECORD_BYTES)
    return text + "\n"


class RecordRefused(UserError):
    """A record its readers would refuse (larger or deeper than they take): it is never written."""

    kind = "record_too_large"  # the error of the stand-in written instead (`_stand_in`)
    advice = "keep states and tool results smaller"


class RecordUnwritable(RecordRefused):
    """A record holding a value JSON has no form for. The adapters refuse such a value where it enters
    (`jsonbounds.check_data`, a bot's `invalid_reply`); this is the last line, so that a value let in by
    another path costs its conversation, never the run (it used to end the run with the folder holding
    only its manifest)."""

    kind = "record_unwritable"
    advice = "something handed the engine a value that is not JSON data"


def _check_readable(record: BaseModel, text: str, limit: int) -> None:
    """RecordRefused when a reader of the run folder would refuse `text`: the writer applies the readers'
    limits (size per line, nesting depth) so that nothing is written that `report` then calls damaged."""
    size = len(text) if len(text) * 4 < limit else len(text.encode("utf-8"))  # bytes, counted only near it
    name = _name(record)
    if size >= limit:
        raise RecordRefused(
            f"{name}: a record of {size / 1e6:,.1f} MB, over the {limit / 1e6:g} MB a reader takes, was not "
            "written"
        )
    depth = text_depth(text)
    if depth > MAX_RECORD_DEPTH:
        raise RecordRefused(
            f"{name}: a record nested {depth} levels deep, over the {MAX_RECORD_DEPTH} a reader takes, was "
            "not written"
        )


def _name(record: BaseModel) -> str:
    return str(
        getattr(record, "id", None) or getattr(record, "conversation_id", None) or type(record).__name__
    )


def _stand_in(record: BaseModel, refused: RecordRefused) -> BaseModel | None:
    """What is written instead of a record its readers would refuse: the conversation (or verdict) as an
    error that says why, without the oversized parts (states first, then turns; evidence for a verdict), so
    the report counts it as an error instead of calling the whole file damaged. None for other records."""
    why, kind = str(refused), refused.kind
    if isinstance(record, ConversationRecord):
        error = ErrorInfo(source="engine", kind=kind, message=f"{why}; {refused.advice}")
        light = record.model_copy(
            update={"final_state": None, "environment_state": None, "stop_reason": "error", "error": error}
        )
        try:
            _check_readable(light, light.model_dump_json(exclude_none=True), MAX_RECORD_BYTES)
            return light
        except (
            RecordRefused,
            ValueError,
        ):  # still too large, or the value that JSON has no form for is in a turn
            return light.model_copy(update={"turns": []})
    if isinstance(record, Verdict):
        error = ErrorInfo(source="judge", kind=kind, message=why)
        update: dict[str, Any] = {"result": "error", "reasoning": "", "evidence": [], "expected": None}
        return record.model_copy(
            update={**update, "actual": None, "outcome": None, "votes": None, "error": error}
        )
    return None


def dump_writable(record: BaseModel) -> str:
    """`dump_line(record)`, or, when its readers would refuse it, the line of its stand-in (an error saying
    why, `_stand_in`) with a note on stderr: one oversized state never stops a run or damages its folder."""
    try:
        return dump_line(record)
    except RecordRefused as exc:
        stand_in = _stand_in(record, exc)
        if stand_in is None:
            raise
        echo(f"note: {exc}; recorded as an error instead", file=sys.stderr)
        return dump_line(stand_in)


def _whole_lines_end(handle: BinaryIO) -> tuple[int, int]:
    """(size, end of the last whole line) of an open records file: they differ by a trailing half line.
    Reads only the file's tail, whatever its size."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return 0, 0
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return size, size
    end = size
    while end > 0:
        start = max(0, end - 65536)
        handle.seek(start)
        newline = handle.read(end - start).rfind(b"\n")
        if newline >= 0:
            return size, start + newline + 1
        end = start
    return size, 0


def torn_tail(path: Path) -> int:
    """Bytes of a last line without its newline (a record being written, or cut by a crash); 0 when the file
    ends on a whole line or does not exist. Reads the file only, never repairs it."""
    if not path.is_file():
        return 0
    with _open_record_file(path) as handle:
        size, keep = _whole_lines_end(handle)
    return size - keep


def _truncate_partial_line(path: Path) -> int:
    """Cut a trailing half line (the writer was killed mid-write) so new records start on a line of their
    own; return the bytes cut."""
    if not path.exists():
        return 0
    with path.open("rb+") as handle:
        size, keep = _whole_lines_end(handle)
        if keep < size:
            handle.truncate(keep)
        return size - keep


class RunFolder:
    """One run's folder. `open` is for readers and never modifies a file; `create` and `resume` are for the
    writers (run, resume, judge), which alone may repair a half-written last line or rewrite a file."""

    def __init__(self, path: Path, *, writable: bool = False, sealed: bool = False) -> None:
        self.path = path
        self.writable = writable
        self._lock: int | None = None
        # Readers (`open`) get held-out conversations sealed (record/seal.py); writers the real records.
        self.sealed = sealed
        self._held_out: set[str] | None = None
        self._keep_state: frozenset[str] = frozenset()  # final-state keys a sealed record keeps

    def _lock_for_writing(self) -> None:
        """Hold the folder's writer lock for the life of this process: one writer at a time (run, resume,
        judge), so a second one can never cut a line the first is still writing. The kernel releases it
        when the process ends, however it ends (`kill -9` included). Readers never take it."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock, as before
            return
        key = str(self.path.resolve())
        if key in _HELD_LOCKS:  # this process already writes it (a run that resumes itself in process)
            return
        fd = os.open(self.path / WRITER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UserError(
                f"{self.path} is being written by another simulator process (run, resume or judge); wait for "
                "it to finish (report and show can read it meanwhile)"
            ) from None
        self._lock = fd
        _HELD_LOCKS[key] = fd

    def release(self) -> None:
        """Give up the writer lock (when the run, resume or judge that took it has finished)."""
        if self._lock is None:
            return
        _HELD_LOCKS.pop(str(self.path.resolve()), None)
        os.close(self._lock)  # closing the descriptor releases the lock
        self._lock = None

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @classmethod
    def create(cls, path: Path, manifest: Manifest) -> RunFolder:
        if path.exists() and not path.is_dir():
            raise UserError(
                f"{option_forms('out', str(path))}: a file of that name exists; name a folder for the run"
            )
        if path.exists() and any(path.iterdir()):
            if (path / MANIFEST).exists():
                raise FolderTaken(path, "a run")
            raise UserError(  # resuming it would say it is not a run folder: never advise it
                f"{option_forms('out', str(path))}: the folder holds other files and no run; name a new or empty "
                "folder for the run"
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"{option_forms('out', str(path))}: cannot create the run folder ({exc.strerror})"
            ) from None
        folder = cls(path, writable=True)
        folder._lock_for_writing()
        folder.write_manifest(manifest)
        return folder

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        """Open a run folder to read it. Nothing in it is changed, even while another process writes it."""
        if missing(path / MANIFEST):  # a manifest that is a FIFO or a folder is refused by its reader
            raise UserError(f"{path} is not a run folder (no {MANIFEST}); pass runs/<run-id>")
        return cls(path, sealed=True)

    @classmethod
    def open_unsealed(cls, path: Path) -> RunFolder:
        """Open a run folder to read it whole, held-out transcripts included: for the engine's own readers
        (merging shards, judging), never for what a person reads."""
        folder = cls.open(path)
        folder.sealed = False
        return folder

    def _sealed_scenarios(self) -> set[str]:
        if not self.sealed:
            return set()
        if self._held_out is None:
            from simulator.record.seal import held_out_scenarios, outcome_keys

            manifest = self.read_manifest()
            self._held_out = held_out_scenarios(manifest)
            self._keep_state = outcome_keys(manifest)
        return self._held_out

    @classmethod
    def resume(cls, path: Path) -> RunFolder:
        """Open a run folder to write more into it: cut a half line a killed writer left behind."""
        folder = cls.open(path)
        folder.sealed = False
        folder.check_resumable()
        folder._lock_for_writing()
        folder.writable = True
        for name in (CONVERSATIONS, VERDICTS):
            _truncate_partial_line(path / name)
        return folder

    def check_resumable(self) -> None:
        """Refuse, with the fix, a folder no writer may add to (a golden run from simulator 0.1)."""
        if self.golden_v1:
            raise UserError(
                f"{self.path} is a golden run from simulator 0.1: it can be reported and compared, not "
                "resumed or judged again; run the items again with `simulator golden run ITEMS --bot module:factory`"
            )

    @property
    def golden_v1(self) -> bool:
        """True for a folder simulator 0.1's golden engine wrote (results.jsonl, no conversations)."""
        return (self.path / GOLDEN_V1_RESULTS).is_file() and not (self.path / CONVERSATIONS).exists()

    def _golden_v1_raw(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The v1 golden manifest and result lines as JSON (a half-written last line is skipped), holding
        what the golden steps read (`golden_v1_checked`)."""
        where = str(self.manifest_path)
        manifest = read_json(_decode(_read_small(self.manifest_path), where), where)
        results = []
        path = self.path / GOLDEN_V1_RESULTS
        for number, line in enumerate(_read_small(path, MAX_RECORD_BYTES).splitlines(keepends=True), start=1):
            if not line.endswith(b"\n") or not line.strip():
                continue
            at = f"{path}:{number}"
            results.append((read_json(_decode(line, at), at), at))
        return golden_v1_checked(manifest, where, results)

    def _golden_v1_records(self) -> tuple[list[ConversationRecord], list[Verdict]]:
        manifest, results = self._golden_v1_raw()
        conversations: list[ConversationRecord] = []
        verdicts: list[Verdict] = []
        for result in sorted(results, key=lambda r: r.get("index", 0)):
            where = f"{self.path / GOLDEN_V1_RESULTS} [item {result.get('item_id')}]"
            new_conversations, new_verdicts = golden_result_1_to_2(result, manifest)
            try:
                conversations += [ConversationRecord.model_validate(c) for c in new_conversations]
                verdicts += [Verdict.model_validate(v) for v in new_verdicts]
            except ValidationError as exc:
                raise _invalid(ConversationRecord, where, exc) from None
        return conversations, verdicts

    def read_manifest(self) -> Manifest:
        where = str(self.manifest_path)
        if self.golden_v1:
            manifest, results = self._golden_v1_raw()
            if manifest.get("kind") == "golden" and manifest.get("schema_version", 1) == 1:
                try:
                    return Manifest.model_validate(golden_manifest_1_to_2(manifest, results))
                except ValidationError as exc:
                    raise _invalid(Manifest, where, exc) from None
        data = _read_small(self.manifest_path)
        try:
            raw = DECODER.decode(_decode(data, where))
        except RecursionError:
            raise UserError(f"{where}: nested too deeply to read; {DAMAGED}") from None
        except Unrepresentable as exc:
            raise UserError(f"{where}: {exc}; {DAMAGED}") from None
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{where}:{exc.lineno}: not valid JSON ({decode_error_in_words(exc)}); {DAMAGED}"
            ) from None
        return _migrated(
            raw, Manifest, migrate_manifest, where, "not a manifest (a JSON object was expected)"
        )

    def write_manifest(self, manifest: Manifest) -> None:
        self._check_writable()
        # Write then rename, so a crash never leaves a half-written manifest.
        write_atomic(self.manifest_path, dump_line(manifest, indent=2, exclude_none=False), sync=False)

    def append_conversation(self, record: ConversationRecord) -> None:
        self._append(CONVERSATIONS, [record])

    def append_verdicts(self, verdicts: Iterable[Verdict]) -> None:
        self._append(VERDICTS, list(verdicts))

    def drop_conversations(self, keep: Callable[[ConversationRecord], bool]) -> int:
        """Rewrite conversations.jsonl without the records `keep` rejects; return how many were dropped."""
        return self._rewrite(CONVERSATIONS, ConversationRecord, migrate_conversation, keep)

    def drop_verdicts(self, keep: Callable[[Verdict], bool]) -> int:
        """Rewrite verdicts.jsonl without the verdicts `keep` rejects; return how many were dropped."""
        return self._rewrite(VERDICTS, Verdict, migrate_verdict, keep)

    def conversations(self) -> Iterator[ConversationRecord]:
        if self.golden_v1:
            return iter(self._golden_v1_records()[0])
        records = read_jsonl(self.path / CONVERSATIONS, ConversationRecord, migrate_conversation)
        sealed = self._sealed_scenarios()
        if not sealed:
            return records
        from simulator.record.seal import seal_record

        return (seal_record(r, self._keep_state) if r.scenario_id in sealed else r for r in records)

    def conversations_stored(self) -> Iterator[ConversationRecord]:
        """Every conversation record, each line read and validated as `conversations()` does, but with its
        turns left in the file (`record/stored_turns.py`): re-read on use, their counts kept. For readers of
        a large run that need few conversations' turns (a report holds 10^4 records in a few MB)."""
        path = self.path / CONVERSATIONS
        if self.golden_v1 or not path.exists():
            yield from self.conversations()
            return
        sealed = self._sealed_scenarios()
        if sealed:
            from simulator.record.seal import seal_record

        def parse(text: str, where: str) -> ConversationRecord:
            record = _parse_line(text, ConversationRecord, migrate_conversation, where)
            return seal_record(record, self._keep_state) if record.scenario_id in sealed else record

        source = LineSource(path, parse)
        for offset, length, number, text in _lines(path):
            record = _parse_or_skip(text, ConversationRecord, migrate_conversation, f"{path}:{number}")
            if record is None:
                continue  # nested too deeply to read: skipped with its note, as read_jsonl does
            if record.scenario_id in sealed:
                record = seal_record(record, self._keep_state)
            facts = facts_of_turns(record.turns)
            stored = StoredTurns(source, offset, length, number, record.id, facts)
            yield record.model_copy(update={"turns": stored})

    def verdicts(self) -> Iterator[Verdict]:
        if self.golden_v1:
            return iter(self._golden_v1_records()[1])
        verdicts = read_jsonl(self.path / VERDICTS, Verdict, migrate_verdict)
        sealed = self._sealed_scenarios()
        if not sealed:
            return verdicts
        from simulator.record.seal import seal_verdict

        return (seal_verdict(v) if v.scenario_id in sealed else v for v in verdicts)

    def verdicts_after(self, offset: int) -> tuple[list[Verdict], int]:
        """The verdict lines written from byte `offset` on (whole lines only) and the offset to read from
        next: for a reader that follows a folder being written without reading it again (collect's alerts).
        An offset past the file's end (the file was rewritten) reads it from the start."""
        path = self.path / VERDICTS
        if self.golden_v1 or not path.exists():
            return list(self.verdicts()), 0
        if offset > path.stat().st_size:
            offset = 0
        sealed = self._sealed_scenarios()
        out: list[Verdict] = []
        end = offset
        for start, length, number, text in _lines(path, offset):
            end = start + length
            verdict = _parse_or_skip(text, Verdict, migrate_verdict, f"{path}:+{number} (byte {start})")
            if verdict is not None:
                out.append(verdict)
        if sealed:
            from simulator.record.seal import seal_verdict

            out = [seal_verdict(v) if v.scenario_id in sealed else v for v in out]
        return out, end

    def labels(self) -> Iterator[Label]:
        """Every label line, in the order written (`labels.jsonl`; none when nobody has labelled yet)."""
        return read_jsonl(self.path / LABELS, Label, _no_migration)

    def append_labels(self, labels: Iterable[Label]) -> None:
        """Append labels. Allowed on a folder opened for reading: labels are about a run, never part of its
        records, so the review desk may label a run another process is still writing."""
        batch = list(labels)
        if not batch:
            return
        text = "".join(dump_line(label) for label in batch)
        with naming(self.path / LABELS), (self.path / LABELS).open("a", encoding="utf-8") as handle:
            handle.write(text)  # one write per batch: lines from two labellers never interleave
            handle.flush()

    def _check_writable(self) -> None:
        if not self.writable:
            raise RuntimeError(f"{self.path} was opened for reading; only run, resume and judge write to it")

    def _append(self, name: str, records: list[ConversationRecord] | list[Verdict]) -> None:
        """Append whole lines and flush, so a finished record survives a crash of the process."""
        self._check_writable()
        if not records:
            return
        text = "".join(dump_writable(record) for record in records)
        with naming(self.path / name), (self.path / name).open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()

    def _rewrite(self, name: str, model: type[T], migrate: Migrate, keep: Callable[[T], bool]) -> int:
        # Streamed to a temporary file, then renamed over the old one: a crash leaves one or the other.
        self._check_writable()
        path = self.path / name
        if not path.exists():
            return 0
        dropped = 0
        with replacing(path) as out:
            for record in read_jsonl(path, model, migrate):
                if keep(record):
                    out.write(dump_line(record).encode("utf-8"))
                else:
                    dropped += 1
        return dropped


def latest_by_id(records: Iterable[ConversationRecord]) -> dict[str, ConversationRecord]:
    """The last record per conversation id (tolerates a file written before retries replaced records)."""
    latest: dict[str, ConversationRecord] = {}
    for record in records:
        latest[record.id] = record
    return latest
