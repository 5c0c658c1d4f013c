"""Derived documents, registered: a document reads run folders (never writes them) and is built once as data,
drawn as sections by the one terminal and the one HTML renderer, printed as a page, and, when it is signable,
signed against the hash of the evidence it read.

The safety case and the history register here from the safety slice; a new document is one registration.
The desk and the command line look a document up by name, so neither switches on which document it is.
"""

from __future__ import annotations

__all__ = ["DocumentKind", "document_kind", "document_kinds", "register_document"]

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulator.registry import Registry

if TYPE_CHECKING:
    from simulator.report.section import Section

# Where the built-in documents register themselves (imported on the first lookup).
BUILTIN_MODULES: tuple[str, ...] = ("simulator.safety.documents",)


@dataclass(frozen=True)
class DocumentKind:
    """One kind of derived document (see the module's docstring)."""

    name: str  # as the command line and the desk name it: "safety-case", "history"
    title: str
    # The document's sections, drawn by the terminal and the HTML renderers (the first is its statement).
    sections: Callable[[Any], list[Section]]
    # The printable page (self-contained HTML).
    page: Callable[[Any], str]
    # The hash of everything it read (runs, hazard log): what a sign-off is recorded against. None: the
    # document is not signed (a history is read, not approved).
    evidence: Callable[[Any], str] | None = None
    # Its exit code as a gate (0 met, 1 not met, 3 not demonstrable); None: it does not gate.
    exit_code: Callable[[Any], int] | None = None

    @property
    def signable(self) -> bool:
        return self.evidence is not None


DOCUMENTS: Registry[DocumentKind] = Registry(
    "document", builtins=BUILTIN_MODULES, group="simulator.documents"
)


def register_document(kind: DocumentKind) -> DocumentKind:
    """Register a kind of document under its name (once: another module taking the name is a mistake)."""
    return DOCUMENTS.register(kind.name, kind, str(sys._getframe(1).f_globals.get("__name__", "?")))


def document_kinds() -> list[DocumentKind]:
    """Every registered kind of document (the built-in modules imported on the first call)."""
    return DOCUMENTS.kinds()


def document_kind(name: str) -> DocumentKind:
    """The document registered as `name`; an unknown name is a UserError naming the known ones."""
    return DOCUMENTS.get(name)
