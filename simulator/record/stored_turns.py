"""A conversation's turns left in the run folder: read again when someone reads them, not held in memory.

A report on a large run needs every conversation's outcome, stop reason and timing, but the turns
themselves only for the few it shows in full (and a handful of whole-run counts). Holding every turn of
10^4 conversations as typed objects took about 300 MB. `StoredTurns` is what `ConversationRecord.turns`
holds for a record read this way: a sequence that re-reads and validates its record's line on use (from
the file handle opened at load, so a file renamed over meanwhile is never read by mistake), and a tuple of
`TurnFact`s computed once at load: what whole-run counts read (roles, models, usage, latencies).

`turn_facts(record)` gives those facts for any record, stored or in memory, so there is one way to count.
"""

from __future__ import annotations

__all__ = ["LineSource", "StoredTurns", "TurnFact", "facts_of_turns", "turn_facts"]

import os
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from simulator.errors import UserError
from simulator.plural import plural
from simulator.record.parts import AudioPart, refused_call
from simulator.record.transcript import Turn, Usage
from simulator.safefiles import FileRefused, open_regular

if TYPE_CHECKING:
    from simulator.record.models import ConversationRecord

# Usage as a plain tuple: input, output, cached input tokens, calls.
UsageTuple = tuple[int, int, int, int]


class TurnFact(NamedTuple):
    """What whole-run counts read of one turn, without its content, and what tells a whole-run pass that
    it need not read the content again (10^4 conversations each re-read and validated was most of a large
    report's time): the characters of its messages (length bias), whether it holds speech (voice figures)
    and a call the environment refused (bot faults)."""

    role: str
    model: str | None
    usage: UsageTuple | None
    latency_s: float
    time_to_first_token_s: float | None
    chars: int
    has_audio: bool
    refused_call: bool

    @property
    def usage_model(self) -> Usage | None:
        """The usage as the typed model (None when the turn recorded none)."""
        if self.usage is None:
            return None
        i, o, c, n = self.usage
        return Usage(input_tokens=i, output_tokens=o, cached_input_tokens=c, calls=n)


def _intern(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def facts_of_turns(turns: Sequence[Turn]) -> tuple[TurnFact, ...]:
    """The facts of each turn, in order (role and model strings interned: 10^5 turns share a few)."""
    return tuple(
        TurnFact(
            sys.intern(turn.role),
            _intern(turn.model),
            None
            if turn.usage is None
            else (
                turn.usage.input_tokens,
                turn.usage.output_tokens,
                turn.usage.cached_input_tokens,
                turn.usage.calls,
            ),
            turn.latency_s,
            turn.time_to_first_token_s,
            sum(map(len, turn.messages)),
            any(isinstance(part, AudioPart) for part in turn.parts),
            any(refused_call(part) for part in turn.parts),
        )
        for turn in turns
    )


class LineSource:
    """One JSON-lines file opened once for re-reading lines by position; `parse(text, where)` turns a line
    back into its (validated) record. Keeps the last record read, so a reader walking one conversation's
    turns item by item reads its line once."""

    def __init__(self, path: os.PathLike[str], parse: Callable[[str, str], ConversationRecord]) -> None:
        self.path = path
        self._parse = parse
        # Held while the loaded run lives (closed with it): a file renamed over meanwhile is never read.
        # Opened as every reader opens a file (safefiles): a FIFO or a device is refused, never waited on.
        try:
            handle = open_regular(Path(path))
        except FileRefused as exc:
            raise UserError(f"{path}: {exc}") from None
        self._fd = handle.fileno()
        self._close = weakref.finalize(self, handle.close)
        self._last: tuple[int, ConversationRecord] | None = None

    def record(self, offset: int, length: int, number: int) -> ConversationRecord:
        """The record on the line at `offset` (byte position; `number` is its line number, for errors)."""
        if self._last is not None and self._last[0] == offset:
            return self._last[1]
        raw = os.pread(self._fd, length, offset)
        record = self._parse(raw.decode("utf-8"), f"{self.path}:{number}")
        self._last = (offset, record)
        return record

    def close(self) -> None:
        self._close()


class StoredTurns(Sequence[Turn]):
    """A record's turns, re-read from its line in the run folder when used (see the module docstring)."""

    __slots__ = ("_length", "_number", "_offset", "_record_id", "_source", "facts")

    def __init__(
        self,
        source: LineSource,
        offset: int,
        length: int,
        number: int,
        record_id: str,
        facts: tuple[TurnFact, ...],
    ) -> None:
        self._source = source
        self._offset = offset
        self._length = length
        self._number = number
        self._record_id = record_id
        self.facts = facts

    def load(self) -> list[Turn]:
        """The turns, read and validated again from the file."""
        record = self._source.record(self._offset, self._length, self._number)
        if record.id != self._record_id:  # never expected: the line was read by position a moment ago
            raise RuntimeError(f"{self._source.path}:{self._number} no longer holds {self._record_id}")
        return record.turns

    def __len__(self) -> int:
        return len(self.facts)

    @overload
    def __getitem__(self, index: int) -> Turn: ...
    @overload
    def __getitem__(self, index: slice) -> list[Turn]: ...
    def __getitem__(self, index: int | slice) -> Turn | list[Turn]:
        return self.load()[index]

    def __iter__(self) -> Iterator[Turn]:
        return iter(self.load())

    def __reversed__(self) -> Iterator[Turn]:
        return reversed(self.load())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredTurns):
            other = other.load()
        return isinstance(other, list) and self.load() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoredTurns({self._record_id!r}, {plural(len(self), 'turn')} at {self._source.path}:{self._number})"


def turn_facts(record: ConversationRecord | Any) -> tuple[TurnFact, ...]:
    """The turn facts of a record: computed at load for stored turns, from the turns otherwise."""
    turns = record.turns
    if isinstance(turns, StoredTurns):
        return turns.facts
    return facts_of_turns(turns)
