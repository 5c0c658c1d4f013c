"""Provider calls of a run, honest about sessions that were killed.

Each session checkpoints its call counts into the manifest every few seconds, so a session killed with
`kill -9` keeps only what it had counted at its last checkpoint. The conversations it finished after that
are in the record with their token usage, one call per model answer: a floor under what it really sent.
"""

from __future__ import annotations

__all__ = ["CallTotals", "call_totals", "limit_lines"]

from dataclasses import dataclass
from datetime import datetime

from simulator.analysis.rundata import RunData
from simulator.plural import plural
from simulator.record.manifest import LimitCounts, Manifest, Session


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


def limit_lines(manifest: Manifest) -> list[str]:
    """One line per provider: the budget its calls were paced to in the last session that counted it, and
    where it came from (the suite, headers, a 429's message, or found from 429s), what the provider
    delivered, the 429s of the whole run, and the connection limit; with the `rpm` option to set."""
    latest: dict[str, LimitCounts] = {}
    for session in manifest.sessions:
        latest.update(session.limits)
    refused = {name: counts.rate_limits for name, counts in manifest.total_calls().items()}
    lines = []
    for name in sorted(latest):
        limits = latest[name]
        parts = []
        if limits.rpm is not None:
            parts.append(f"paced at {limits.rpm:g} requests/min ({limits.rpm_source})")
        if limits.tpm is not None:
            parts.append(f"{limits.tpm:g} tokens/min ({limits.tpm_source})")
        if limits.rpm is None and limits.tpm is None:
            parts.append("not paced")
        if limits.observed_rpm:
            parts.append(f"delivered about {limits.observed_rpm:g} requests/min")
        if refused.get(name):
            parts.append(f"{plural(refused[name], 'call')} refused for its rate limit")
        parts.append(
            f"connections {limits.final} of {limits.max_connections} at the end "
            f"(lowest {limits.lowest}, {limits.cuts} cuts)"
        )
        line = f"{name}: " + "; ".join(parts)
        if limits.rpm_source == "found from 429s":
            line += f". Set providers.{name}.rpm (or resume with --rpm {name}=N) to start at its budget"
        lines.append(line)
    return lines
