"""Controls verified by review: design, process, training and labelling controls, which no run can test.

Most real DCB0129 controls are of this kind (a design decision, a clinical review process, user training,
a label on the screen). Their evidence is a document, who reviewed it, when, and the reviewer's judgement;
the document's sha256 is taken from the file when it sits beside the hazard log (so an edited document
changes the evidence hash), else the declared one is kept. Such a control is shown as "verified by
review", never as a test result: it has no rate, no bound and does not move a hazard on the matrix.
"""

from __future__ import annotations

__all__ = ["reviewed_control"]

import hashlib
from pathlib import Path

from simulator.safety.controls import ControlResult
from simulator.safety.hazards import Control


def _document_hash(document: str, declared: str | None, base: Path | None) -> str | None:
    path = (base / document) if base is not None else Path(document)
    if path.is_file():
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    if declared is None:
        return None
    return declared if declared.startswith("sha256:") else f"sha256:{declared}"


def reviewed_control(control: Control, hazard_log: Path | None) -> ControlResult:
    """The control as the document shows it: its review evidence, the CSO's judgement, no test figures."""
    evidence = control.evidence
    assert evidence is not None, "a reviewed control has evidence (hazards.Control)"
    digest = _document_hash(evidence.document, evidence.sha256, hazard_log.parent if hazard_log else None)
    review = evidence.model_copy(update={"sha256": digest})
    found = (
        ""
        if digest
        else " (no file beside the hazard log and no sha256 declared: the document is not pinned)"
    )
    return ControlResult(
        id=control.id,
        description=control.description,
        criteria=[],
        tags=[],
        threshold="",
        metric="",
        scenarios=[],
        conversations=0,
        passed=0,
        failed=0,
        errored=0,
        not_judged=0,
        not_applicable=0,
        simulator_faulted=0,
        rate=None,
        bound=None,
        bound_side="upper",
        status="verified by review",
        reason=(
            f"{control.kind} control verified by review: {evidence.reviewer} on {evidence.reviewed.isoformat()} "
            f"read {evidence.document}{found}; judgement: {evidence.judgement}"
        ),
        advice="",
        more_scenarios=None,
        bound_without_faulted=None,
        failing=[],
        failing_total=0,
        kind=control.kind,
        review=review,
    )
