"""The transcript reader's filter: which conversations match, and the previous and next one in that list."""

from __future__ import annotations

__all__ = ["ReaderFilter", "matching", "neighbours"]

from dataclasses import dataclass, fields
from urllib.parse import urlencode

from simulator.report.model import Report, Transcript


@dataclass(frozen=True)
class ReaderFilter:
    """Empty fields match everything. `outcome` is an outcome case kind (under, over, no_decision, other,
    error) or "correct"; `to_read` keeps the cases to read (wrong or missing outcome, failed or errored)."""

    criterion: str = ""
    result: str = ""
    tag: str = ""
    outcome: str = ""
    to_read: str = ""

    @classmethod
    def from_query(cls, query: dict[str, str]) -> ReaderFilter:
        return cls(**{f.name: query.get(f.name, "") for f in fields(cls)})

    def query(self) -> str:
        """The filter as a query string (empty fields left out)."""
        return urlencode({f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)})


def _outcome_kinds(report: Report) -> dict[str, str]:
    if report.outcome is None:
        return {}
    return {case.conversation_id: case.kind for case in report.outcome.cases}


def _keeps(t: Transcript, f: ReaderFilter, kinds: dict[str, str]) -> bool:
    verdicts = [v for v in t.verdicts if not f.criterion or v.criterion_id == f.criterion]
    if f.criterion and not verdicts:
        return False
    if f.result and not any(v.result == f.result for v in verdicts):
        return False
    if f.tag and f.tag not in t.tags:
        return False
    if f.outcome and kinds.get(t.id, "correct") != f.outcome:
        return False
    return not f.to_read or t.id in kinds or t.status in ("fail", "error")


def matching(report: Report, f: ReaderFilter) -> list[Transcript]:
    """The conversations the filter keeps, in the report's order."""
    kinds = _outcome_kinds(report)
    return [t for t in report.transcripts if _keeps(t, f, kinds)]


def neighbours(items: list[Transcript], current: str) -> tuple[str | None, str | None, int]:
    """Ids of the previous and next conversation around `current`, and its 1-based position (0: absent)."""
    ids = [t.id for t in items]
    if current not in ids:
        return (None, ids[0] if ids else None, 0)
    at = ids.index(current)
    return (ids[at - 1] if at else None, ids[at + 1] if at + 1 < len(ids) else None, at + 1)
