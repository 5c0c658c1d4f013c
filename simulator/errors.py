"""Errors a user can fix: printed as one clear line each, never as a traceback, exit code 2."""

from __future__ import annotations

__all__ = ["Problem", "UserError"]

import re
from dataclasses import dataclass

# Control characters (a newline inside a quoted value, an escape code from a file) would break the one line
# or be obeyed by the terminal: shown as visible escapes instead.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _one_line(text: str) -> str:
    return _CONTROL.sub(lambda m: "\\n" if m.group() == "\n" else f"\\x{ord(m.group()):02x}", text)


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
        return _one_line(f"{where}{field}: {self.message}")


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
