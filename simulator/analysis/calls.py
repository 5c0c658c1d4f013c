"""Provider calls of a run, honest about sessions that were killed.

Each session checkpoints its call counts into the manifest every few seconds, so a session killed with
`kill -9` keeps only what it had counted at its last checkpoint. The conversations it finished after that
are in the record with their token usage, one call per model answer: a floor under what it really sent.
"""

from __future__ import annotations

__all__ = ["CallTotals", "call_totals"]

from dataclasses import dataclass
from datetime import datetime

from simulator.analysis.rundata import RunData
from simulator.record.manifest import Session


@dataclass(frozen=True)
class CallTotals:
    """Provider requests of a run: as counted at checkpoints, and at least (with killed sessions' floors)."""

    counted: int
    at_least: int
    killed_sessions: int


def _recorded_calls(run: RunData, start: datetime, end: datetime | None) -> int:
    """Model answers recorded by conversations that ended in [start, end), cache hits left out."""
    total = 0
    for record in run.conversations:
        if record.ended_at >= start and (end is None or record.ended_at < end):
            answered = sum(usage.calls for usage in record.usage_by_role.values())
            total += max(0, answered - sum(record.cache_hits.values()))
    return total


def _session_end(session: Session, sessions: list[Session]) -> datetime | None:
    later = [s.started_at for s in sessions if s.started_at > session.started_at]
    return min(later, default=None)


def call_totals(run: RunData) -> CallTotals:
    """Calls counted in the manifest, and a floor that adds, for each killed session, the calls its
    finished conversations recorded beyond what its last checkpoint counted."""
    manifest = run.manifest
    counted = sum(counts.attempts for counts in manifest.total_calls().values())
    killed = manifest.killed_sessions()
    missing = 0
    for session in killed:
        recorded = _recorded_calls(run, session.started_at, _session_end(session, manifest.sessions))
        missing += max(0, recorded - sum(c.attempts for c in session.calls.values()))
    return CallTotals(counted=counted, at_least=counted + missing, killed_sessions=len(killed))
