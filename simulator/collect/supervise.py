"""What keeps `simulator collect` going and says what it did not take: the notices it logs (throttled, so a
flood of one kind of problem is one line a minute, with the count), and the quarantine, where a conversation
whose closing raised goes (its spans and the error, on disk), so the close loop carries on with the next.

A quarantined conversation is journalled like a closed one (a marker whose folder is `QUARANTINED`), so a
restart neither replays it into the same failure nor loses it: its spans stay in
`OUT/.collect/quarantine.jsonl`, redacted as everything the collector keeps.
"""

from __future__ import annotations

__all__ = ["LOGGER", "QUARANTINED", "Notices", "Quarantine", "describe"]

import json
import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.collect.spans import to_line
from simulator.collect.spool import journal_lines
from simulator.record.redact import safe_json
from simulator.traces.otlp_decode import Span
from simulator.visible import visible

LOGGER = logging.getLogger("simulator.collect")
QUARANTINED = ":quarantined"  # a marker's folder: the conversation went to the quarantine, not a run folder
QUARANTINE_FILE = "quarantine.jsonl"


def describe(exc: BaseException) -> str:
    """An exception as one line for the operator's log: its kind and its first line, control characters
    shown, never obeyed by the terminal; an exception whose own text cannot be had is named by its kind."""
    try:
        text = str(exc).strip()
    except Exception:
        text = "(its message could not be read)"
    first = visible(text.splitlines()[0][:300]) if text else "no message"
    return f"{type(exc).__name__}: {first}"


class Notices:
    """Log lines, at most one per kind every `every_s` seconds; the lines held back are counted and said
    with the next one of their kind."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self.last: dict[str, float] = {}
        self.held: dict[str, int] = {}

    def say(self, kind: str, message: str, *, level: int = logging.WARNING) -> None:
        now = time.monotonic()
        if kind in self.last and now - self.last[kind] < self.every_s:
            self.held[kind] = self.held.get(kind, 0) + 1
            return
        more = self.held.pop(kind, 0)
        self.last[kind] = now
        suffix = f" ({more} more like this since the last notice)" if more else ""
        LOGGER.log(level, "%s%s", message, suffix)


class Quarantine:
    """`OUT/.collect/quarantine.jsonl`: one line per conversation that could not be closed."""

    def __init__(self, root: Path) -> None:
        self.path = root / QUARANTINE_FILE

    def keep(self, key: str, spans: list[Span], exc: BaseException) -> None:
        """Write the conversation's spans and the error (appended, flushed)."""
        entry: dict[str, Any] = {
            "key": key,
            "at": datetime.now(UTC).isoformat(),
            "error": describe(exc),
            "spans": [json.loads(to_line(span)) for span in spans],
        }
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(safe_json(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
            handle.flush()

    def count(self) -> int:
        # Bounded, as the journals: a quarantine linked to /dev/zero is refused, never counted for ever.
        return sum(1 for _ in journal_lines(self.path))
