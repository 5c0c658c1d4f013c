"""The safety slice's documents, registered (report/documents.py): the clinical safety case (signable, a
gate) and the history of a suite's runs."""

from __future__ import annotations

__all__: list[str] = []

from simulator.report.documents import DocumentKind, register_document
from simulator.safety.history_view import history_html, history_sections
from simulator.safety.html import safety_case_html
from simulator.safety.view import safety_case_sections

register_document(
    DocumentKind(
        name="safety-case",
        title="Clinical safety case",
        sections=safety_case_sections,
        page=safety_case_html,
        evidence=lambda case: case.evidence_hash,
        exit_code=lambda case: case.exit_code,
    )
)
register_document(DocumentKind(name="history", title="History", sections=history_sections, page=history_html))
