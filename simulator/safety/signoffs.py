"""Sign-offs of a safety case: append-only lines in the desk's own data folder, each naming the evidence hash.

A sign-off records who (name, role), what (approve / reject / approve with conditions, a comment), and
exactly which evidence: the runs and the safety case's evidence hash, which covers the hazard log, the
verdicts, the labels and every file hash. It is never written into a run folder (derived documents do not
write there) and never rewritten: a later decision is a new line. When the same hazard log is judged on a
later run, or the evidence changes (a re-judge, new labels, an edited hazard log), the earlier sign-off
shows "signed for run X; the evidence has changed since".
"""

from __future__ import annotations

__all__ = ["DECISIONS", "SignOff", "SignOffBook", "check_decision", "not_shown_controlled", "signoff_views"]

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from pydantic import Field, ValidationError

from simulator.errors import UserError, pattern_or_message
from simulator.models import StrictModel
from simulator.readers import missing, text_lines
from simulator.safefiles import append_durable

if TYPE_CHECKING:
    from simulator.safety.case import SafetyCase

Decision = Literal["approve", "reject", "approve with conditions"]
DECISIONS: tuple[str, ...] = get_args(Decision)
FILE = "signoffs.jsonl"


class SignOff(StrictModel):
    """One reviewer's decision on one safety case, as appended to `signoffs.jsonl`."""

    signed_at: datetime
    name: str = Field(min_length=1, max_length=200)
    role: str = Field(min_length=1, max_length=200)
    decision: Decision
    comment: str = Field(default="", max_length=5000)
    # Why approving is acceptable although some hazard is not shown controlled (required then).
    justification: str = Field(default="", max_length=5000)
    runs: list[str]
    evidence_hash: str
    hazard_log: str
    hazard_log_sha256: str
    # The signed document, archived content-addressed in the desk's folder (safety/archive.py).
    document: str | None = None
    document_sha256: str | None = None
    document_pdf: str | None = None  # the PDF of it, when signed with --pdf
    # This line's own record, archived beside the document (safety/archive.py): what --verify checks the
    # line against, so an edited decision is found. Absent in lines signed before records were kept.
    record_sha256: str | None = None


def not_shown_controlled(case: SafetyCase) -> list[str]:
    """The hazards whose residual risk is not acceptable or not demonstrated on this evidence."""
    return [h.id for h in case.hazards if h.state not in ("controlled", "controlled by review")]


def check_decision(case: SafetyCase, decision: str, comment: str, justification: str) -> None:
    """The rules of a sign-off, the same at the desk and on the command line (UserError when broken)."""
    if decision not in DECISIONS:
        raise UserError(f"choose a decision: {', '.join(DECISIONS)}")
    if decision == "approve with conditions" and not comment.strip():
        raise UserError("approve with conditions: write the conditions in the comment")
    open_hazards = not_shown_controlled(case)
    if decision != "reject" and open_hazards and not justification.strip():
        raise UserError(
            f"{decision}: {len(open_hazards)} of {len(case.hazards)} hazards are not shown controlled "
            f"({', '.join(open_hazards)}); write a justification (why deployment is acceptable with this "
            "residual risk), or reject"
        )


class SignOffView(StrictModel):
    """A sign-off as a page shows it: current, or signed on other evidence."""

    signoff: SignOff
    current: bool
    note: str


class SignOffBook:
    """The append-only sign-off file of one desk."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILE

    def append(self, signoff: SignOff) -> None:
        """Add one line, flushed to disk; earlier lines are never touched."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_durable(self.path, signoff.model_dump_json() + "\n")

    def all(self) -> list[SignOff]:
        """Every sign-off, oldest first; a damaged line is one clear error naming its line."""
        if missing(self.path):
            return []
        out = []
        for number, line in text_lines(self.path):  # bounded: a FIFO or a device is refused by name
            try:
                out.append(SignOff.model_validate_json(line))
            except ValidationError as exc:
                raise UserError(
                    f"{self.path}:{number}: not a sign-off record ({pattern_or_message(exc.errors()[0])})"
                ) from None
        return out


def signoff_views(book: SignOffBook, hazard_log: str, evidence_hash: str) -> list[SignOffView]:
    """The sign-offs of this hazard log, newest first, each said to be current or on other evidence."""
    views = []
    for signoff in reversed(book.all()):
        if signoff.hazard_log != hazard_log:
            continue
        current = signoff.evidence_hash == evidence_hash
        runs = ", ".join(signoff.runs)
        note = (
            f"signed for run {runs} on this evidence"
            if current
            else f"signed for run {runs}; the evidence has changed since"
        )
        views.append(SignOffView(signoff=signoff, current=current, note=note))
    return views
