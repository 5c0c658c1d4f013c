"""Errors a user can fix: printed as one clear line each, never as a traceback, exit code 2."""

from __future__ import annotations

__all__ = ["Problem", "UserError", "shown_input"]

import datetime
from dataclasses import dataclass
from typing import Any

from simulator.visible import visible


@dataclass(frozen=True)
class Problem:
    """One thing wrong in one input file: where it is and how to fix it."""

    file: str
    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" [{self.field}]" if self.field else ""
        # A value quoted from a file can hold a newline, a terminal escape or a bidi override: shown as
        # escapes, so the problem stays on one line and reads in the order it was written.
        return visible(f"{where}{field}: {self.message}", keep_newlines=False)


class UserError(Exception):
    """A mistake in the user's input or configuration; the CLI prints it without a traceback and exits 2."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []

    def render(self) -> str:
        if not self.problems:
            return str(self)
        lines = [f"{self} ({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}):"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


def shown_input(value: Any, *, limit: int = 60, yaml: bool = True) -> str:
    """A value a file or a call gave, as its writer wrote it, for `(got ...)` in a problem: a mapping or a
    list by its kind only; from a file (`yaml`), in YAML's words (`true`, `null`, a date as written), never
    Python's (`True`, `None`, `datetime.date(2026, 1, 1)`), and a scalar YAML did not read as text says how
    to make it text; from Python, as Python writes it."""
    if isinstance(value, dict):
        return "a mapping" if yaml else "a dict"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, set | frozenset):
        return "a set"
    if not yaml:
        return repr(value)[:limit]
    if isinstance(value, bool):
        return f"{str(value).lower()}: YAML reads yes, no, on, off, true and false as a boolean; quote it for text"
    if value is None:
        return "null, an empty value"
    if isinstance(value, datetime.date):  # datetime too
        return f"{value.isoformat()}: YAML reads an unquoted date as a date; quote it for text"
    if isinstance(value, bytes | bytearray):
        return "binary data"
    return repr(value)[:limit]
