"""One sign-off, the same from the desk and the command line: the rules checked, the document archived,
the line appended. Refused when approving while a hazard is not shown controlled without a justification."""

from __future__ import annotations

__all__ = ["sign_case"]

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from simulator.errors import UserError
from simulator.safety.archive import archive_document, archive_record
from simulator.safety.case import SafetyCase
from simulator.safety.html import print_pdf, safety_case_html
from simulator.safety.signoffs import SignOff, SignOffBook, check_decision, signoff_views


def sign_case(
    folder: Path,
    case: SafetyCase,
    name: str,
    role: str,
    decision: str,
    comment: str,
    justification: str,
    pdf: bool = False,
) -> SignOff:
    """Check the decision, archive the document as read (JSON and HTML; with `pdf`, also printed through
    Chromium) and append the sign-off."""
    name, role = name.strip(), role.strip()
    if not name or not role:
        raise UserError("give your name and your role (e.g. Clinical Safety Officer) before signing")
    check_decision(case, decision, comment, justification)
    book = SignOffBook(folder)
    views = signoff_views(book, case.traceability.hazard_log, case.evidence_hash)
    html = safety_case_html(case, views)
    printed = None
    if pdf:
        with tempfile.TemporaryDirectory(prefix="signed-") as tmp:
            print_pdf(html, Path(tmp) / "document.pdf")
            printed = (Path(tmp) / "document.pdf").read_bytes()
    kept = archive_document(folder, case, html, printed)
    signoff = SignOff(
        signed_at=datetime.now(UTC),
        name=name,
        role=role,
        decision=decision,  # type: ignore[arg-type]
        comment=comment.strip(),
        justification=justification.strip(),
        runs=[r.run_id for r in case.traceability.runs],
        evidence_hash=case.evidence_hash,
        hazard_log=case.traceability.hazard_log,
        hazard_log_sha256=case.traceability.hazard_log_sha256,
        document=kept.json_path,
        document_sha256=kept.sha256,
        document_pdf=kept.pdf_path,
    )
    signoff = archive_record(folder, signoff)
    book.append(signoff)
    return signoff
