"""The review desk's decisions on proposals: accepted (as written or edited) or rejected, append-only.

They live in the desk's own data folder (`desk-data/proposal_reviews.jsonl` by default), never in a run
folder and never in the proposal file: one JSON line per decision, written with a single append, so two
reviewers deciding at once never mix lines and no decision is ever overwritten. The latest line for a
proposal (its id and the run it was made from) is its current state; `simulator try` applies an accepted
edit and refuses a rejected proposal.
"""

from __future__ import annotations

__all__ = ["REVIEWS_FILE", "ProposalReview", "append_review", "latest_review", "read_reviews"]

import os
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from simulator.jsonbounds import loads_bounded
from simulator.models import StrictModel
from simulator.readers import missing, text_lines

REVIEWS_FILE = "proposal_reviews.jsonl"


class ProposalReview(StrictModel):
    """One reviewer's decision on one proposal; `edited_yaml` holds the proposal as they edited it."""

    proposal_id: str
    run_id: str
    proposal_file: str
    proposal_sha256: str  # the file as the reviewer read it
    decision: Literal["accepted", "rejected"]
    reviewer: str
    reviewed_at: datetime
    note: str | None = None
    edited_yaml: str | None = None


def append_review(folder: Path, review: ProposalReview) -> None:
    """Append one decision (one write of one line, in append mode)."""
    folder.mkdir(parents=True, exist_ok=True)
    line = (review.model_dump_json() + "\n").encode("utf-8")
    fd = os.open(folder / REVIEWS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_reviews(folder: Path) -> list[ProposalReview]:
    """Every decision in the order written; a line that does not parse (a torn write) is skipped."""
    path = folder / REVIEWS_FILE
    if missing(path):
        return []
    out = []
    for _, line in text_lines(path):
        try:
            out.append(ProposalReview.model_validate(loads_bounded(line, "the line")))
        except (ValueError, ValidationError):
            continue
    return out


def latest_review(folder: Path, proposal_id: str, run_id: str) -> ProposalReview | None:
    """The current decision on a proposal, or None when nobody has decided."""
    mine = [r for r in read_reviews(folder) if (r.proposal_id, r.run_id) == (proposal_id, run_id)]
    return mine[-1] if mine else None
