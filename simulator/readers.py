"""The one bounded reader for structured input: text files (YAML, prompts, vocabularies), JSON, JSON lines,
OTLP JSON and protobuf, and CSV sheets all pass here, with one set of checks.

A file a person names may be a FIFO, a device, a folder, a symlink loop, UTF-16, binary, or gigabytes; a
body another program sends may be deep, truncated or full of numbers Python's parsers take and later choke
on. Each check lives once: the file is a regular file read by at most a cap (`safefiles`), text is UTF-8
(a UTF-8 BOM is dropped, a UTF-16/32 one is named), JSON is bounded in depth and refuses NaN, Infinity,
numbers too large to hold and repeated keys (`jsonbounds`), YAML aliases are walked once (`yamlfile`), CSV
cells are bounded by the file's cap and a sheet with the wrong separator is named as such, protobuf is
bounded in size and its decode errors become one line. Every refusal is an `InputRefused`: a `UserError`
whose message is one line naming the file (and line, or field) and the fix, never Python's exception text.
"""

from __future__ import annotations

__all__ = [
    "MAX_IMPORT_BYTES",
    "MAX_LINE_BYTES",
    "MAX_TAU2_BYTES",
    "InputRefused",
    "byte_lines",
    "missing",
    "parse_protobuf",
    "read_csv",
    "read_json",
    "read_json_file",
    "read_or_refuse",
    "read_text",
    "read_text_of_lines",
    "safe_cell",
    "text_lines",
    "unquote_cell",
    "unreadable_line",
    "write_sheet",
]

import csv
import functools
import io
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import Problem, UserError
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.safefiles import WAITS, FileRefused, open_regular, read_capped, too_large

MAX_CSV_BYTES = 50_000_000  # a labels sheet or a golden set: far above any real one
# An exported trace or transcript file, whole (OTLP JSON and CSV are read whole; JSON lines a line at a
# time, counted): split a larger one.
MAX_IMPORT_BYTES = 1_000_000_000
MAX_LINE_BYTES = 256_000_000  # one line of a JSON-lines file
MAX_TAU2_BYTES = 500_000_000  # a tau2-bench db.json or tasks.json

_UTF16_32 = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


class InputRefused(UserError):
    """Structured input refused by the bounded reader: one line naming where and the fix (`problem`)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _refused(
    path: Path | str, message: str, line: int | None = None, field: str | None = None
) -> InputRefused:
    return InputRefused(Problem(str(path), message, line=line, field=field))


def missing(path: Path) -> bool:
    """Nothing at all at `path`. A folder, a FIFO, a device or a link loop is there, and is refused by the
    reader saying what it is: "no such file" would send the user looking for the wrong mistake."""
    return not path.exists() and not path.is_symlink()


def decode_text(raw: bytes, path: Path | str, save_as: str = "UTF-8 text") -> str:
    """`raw` as text, or InputRefused naming the line: UTF-16/32 (named, not called binary), NUL bytes,
    bytes that are not UTF-8. A UTF-8 byte-order mark (what some editors and Excel write) is dropped."""
    if raw.startswith(_UTF16_32):
        raise _refused(path, f"UTF-16 or UTF-32 text, not UTF-8; save it as {save_as}")
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    if b"\0" in raw:
        line = raw[: raw.index(b"\0")].count(b"\n") + 1
        raise _refused(path, f"holds NUL bytes (a binary or UTF-16 file?); save it as {save_as}", line)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _refused(path, f"not UTF-8 (byte {exc.start}); save it as {save_as}", line) from None


def read_text(
    path: Path, limit: int, advice: str = "split it into smaller files", save_as: str = "UTF-8 text"
) -> str:
    """A text file someone named: a regular file (no FIFO, device, folder or link loop) of at most `limit`
    bytes, counted while reading, decoded by `decode_text`; InputRefused naming the file otherwise."""
    try:
        raw = read_capped(path, limit, advice)
    except FileRefused as exc:
        raise _refused(path, str(exc)) from None
    return decode_text(raw, path, save_as)


def read_text_of_lines(
    path: Path, limit: int, advice: str = "split it into smaller files", save_as: str = "UTF-8 text"
) -> tuple[str, list[tuple[int, str]]]:
    """`read_text` for a file of records a line (or documents over several): a line that is not text is
    blanked (the line numbers kept) and returned with why (`unreadable_line`), instead of refusing the file."""
    try:
        raw = read_capped(path, limit, advice)
    except FileRefused as exc:
        raise _refused(path, str(exc)) from None
    try:
        return decode_text(raw, path, save_as), []
    except InputRefused:
        if raw.startswith(_UTF16_32):
            raise
    lines = raw.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    unreadable = [(number, why) for number, line in enumerate(lines, 1) if (why := unreadable_line(line))]
    for number, _ in unreadable:
        lines[number - 1] = b""
    return b"\n".join(lines).decode("utf-8"), unreadable


def read_or_refuse(path: Path, limit: int) -> str:
    """`read_text` for the desk's pages: the same checks; the InputRefused is the page's one-line error."""
    return read_text(path, limit, "edit it in your editor")


def read_json(text: str | bytes, where: str, *, max_bytes: int | None = None) -> Any:
    """JSON from a file or a body, bounded by `jsonbounds` (depth, size, NaN, huge numbers, repeated keys);
    InputRefused naming `where` otherwise."""
    try:
        return loads_bounded(text, "the JSON", max_bytes=max_bytes)
    except JSONRefused as exc:
        raise InputRefused(Problem(where, str(exc).removeprefix("the JSON "))) from None


def read_json_file(path: Path, limit: int, save_as: str = "UTF-8 JSON") -> Any:
    """A JSON file someone named, read whole by `read_text` and parsed by `read_json`."""
    return read_json(read_text(path, limit, "split it into smaller files", save_as), str(path))


def unreadable_line(line: bytes) -> str | None:
    """Why one line of a text file cannot be read as text (`not UTF-8 (byte N of the line)`, counted from
    0, or NUL bytes), or None when it can. A record-per-line reader skips such a line and reads the rest."""
    if b"\0" in line:
        return f"holds NUL bytes (byte {line.index(0)} of the line)"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte {exc.start} of the line)"
    return None


def text_lines(
    path: Path,
    max_line: int = MAX_LINE_BYTES,
    save_as: str = "UTF-8 text",
    max_total: int | None = None,
    advice: str = "split it into smaller files",
    skip: Callable[[int, str], None] | None = None,
) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a regular file, read by `byte_lines` (each line at most
    `max_line` bytes, the whole file at most `max_total`), decoded; InputRefused naming the file and line
    for a FIFO, a device, an over-long line or file, or text that is not UTF-8. With `skip` (a reader of
    one record a line), a line that is not text is handed to it (line number, `unreadable_line`'s reason)
    and the rest is read. Blank lines are skipped; the first line's UTF-8 BOM is dropped."""
    for number, line in byte_lines(path, max_line, max_total, advice):
        if number == 1 and line.startswith(_UTF16_32):
            raise _refused(path, f"UTF-16 or UTF-32 text, not UTF-8; save it as {save_as}")
        if line.isascii() and b"\0" not in line:
            text = line.decode()
        elif skip is None:
            text = decode_text(line, path, save_as)
        else:
            line = line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line
            why = unreadable_line(line)
            if why is not None:
                skip(number, why)
                continue
            text = line.decode("utf-8")
        if text.strip():
            yield number, text


def byte_lines(
    path: Path,
    max_line: int = MAX_LINE_BYTES,
    max_total: int | None = None,
    advice: str = "split it into smaller files",
    start: int = 0,
) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes with the newline) of each line of a regular file, read a line at a time, each at
    most `max_line` bytes and, with `max_total`, the whole file at most that many (counted while reading, so
    a file that grows or says it is smaller is cut all the same; `advice` is the fix the refusal gives);
    InputRefused naming the file and line for a FIFO, a device, a folder, or an over-long line or file.
    Undecoded: for a reader that decides itself what a line it cannot read means (a journal skips it).
    From byte `start` (a line's first byte) when given, for a reader that follows a file as it grows:
    line numbers and the total then count from there."""
    try:
        handle = open_regular(path)
        if max_total is not None and os.fstat(handle.fileno()).st_size - start > max_total:
            handle.close()  # said at once, without reading gigabytes first
            raise FileRefused(too_large(max_total, advice))
        handle.seek(start)
    except FileRefused as exc:
        raise _refused(path, str(exc)) from None
    with handle:
        number = total = 0
        while True:
            try:
                line = handle.readline(max_line + 1)
            except BlockingIOError:
                raise _refused(path, WAITS) from None
            except OSError as exc:
                raise _refused(path, f"cannot read the file ({exc.strerror})", number + 1) from None
            if not line:
                return
            number += 1
            total += len(line)
            if max_total is not None and total > max_total:
                raise _refused(path, too_large(max_total, advice), number)
            if len(line) > max_line:
                raise _refused(path, f"a line longer than {max_line / 1e6:g} MB; split it", number)
            yield number, line


@dataclass
class CsvSheet:
    """A CSV file's header and rows, each row with the line it starts on."""

    path: Path
    header: list[str]
    rows: list[tuple[int, list[str]]] = field(default_factory=list)

    def dicts(self) -> Iterator[tuple[int, dict[str, str]]]:
        """Each row as {column: cell}; cells past the header are under the key `None` (as csv.DictReader)."""
        for line, cells in self.rows:
            row: dict[Any, Any] = dict(zip(self.header, cells, strict=False))
            for column in self.header[len(cells) :]:
                row[column] = None
            if len(cells) > len(self.header):
                row[None] = cells[len(self.header) :]
            yield line, row


_SAVE_CSV = "save it as CSV (comma-separated, UTF-8)"


def read_csv(path: Path, limit: int = MAX_CSV_BYTES) -> CsvSheet:
    """A CSV sheet, read by `read_text` and parsed with cells bounded by the file's cap; InputRefused naming
    the line for a stray quote, and naming the separator for a sheet saved with `;` or tabs."""
    text = read_text(path, limit, "split the sheet", save_as="CSV (comma-separated, UTF-8)")
    csv.field_size_limit(max(csv.field_size_limit(), limit))  # the file's cap bounds every cell already
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)  # an unclosed quote is an error, not EOF
    sheet = CsvSheet(path, [])
    line = 1  # where the row being read starts: where its stray quote is
    try:
        sheet.header = [name.strip() for name in next(reader, [])]
        while True:
            line = reader.line_num + 1
            cells = next(reader, None)
            if cells is None:
                break
            if any(cell.strip() for cell in cells):
                sheet.rows.append((line, cells))
    except csv.Error:
        raise _refused(
            path, f"a quote opened and never closed, or a stray quote after one; {_SAVE_CSV}", line
        ) from None
    if len(sheet.header) == 1:
        for separator, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
            if separator in sheet.header[0]:
                raise _refused(path, f"its cells are separated by {name}, not commas; {_SAVE_CSV}", 1)
    return sheet


# A cell starting with one of these is run as a formula by Excel, LibreOffice and Sheets (`=cmd|' /c calc'!A1`).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> str:
    """A cell for a sheet simulator writes: text a spreadsheet would run as a formula gets a leading `'`,
    which spreadsheets show as text (and which `read_csv`'s callers strip again)."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def write_sheet(path: Path, header: list[str], rows: Iterable[list[object]]) -> None:
    """A CSV sheet for people to fill in (labels): every cell through `safe_cell`, so an id or a note a
    spreadsheet would run as a formula is shown as text; `read_csv` reads it back."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([safe_cell(name) for name in header])
        writer.writerows([safe_cell(cell) for cell in row] for row in rows)


def unquote_cell(value: str | None) -> str | None:
    """A cell of a sheet simulator wrote, without the `'` that `safe_cell` put before a formula-like start."""
    if value and value.startswith("'") and value[1:].startswith(_FORMULA_START):
        return value[1:]
    return value


@functools.cache
def _protobuf_decode_error() -> type[Exception]:
    """protobuf's DecodeError, imported on first use (protobuf is an extra) and once."""
    from google.protobuf.message import DecodeError

    return DecodeError


def parse_protobuf(body: bytes, message: Any, what: str, max_bytes: int) -> Any:
    """`message` (a protobuf message instance) filled from `body`, or InputRefused naming `what`: over
    `max_bytes`, truncated, of the wrong wire types, or nested past protobuf's own recursion limit."""
    DecodeError = _protobuf_decode_error()
    if len(body) > max_bytes:
        raise _refused(what, f"larger than {max_bytes:,} bytes; send smaller batches")
    try:
        message.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError):
        raise _refused(
            what,
            f"not a {type(message).__name__} protobuf message (cut short, or fields of the wrong type); "
            "send what an OpenTelemetry SDK's OTLP exporter sends",
        ) from None
    return message
