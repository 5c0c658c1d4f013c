"""Fields for a new file (`simulator new scenario|criterion|hazard`): from a flag, or asked on a terminal, and
the new file written without clobbering one that exists."""

from __future__ import annotations

__all__ = ["Asker", "write_new"]

import sys
from pathlib import Path

from simulator.commands.outputs import make_folder_for, write_output
from simulator.errors import UserError
from simulator.visible import echo


class Asker:
    """Reads a field from its flag, or asks for it on a terminal; without a terminal a missing required
    field is one clear error naming its flag."""

    def __init__(self, interactive: bool | None = None) -> None:
        self.interactive = sys.stdin.isatty() if interactive is None else interactive

    def one(self, given: str | None, prompt: str, flag: str, default: str | None = None) -> str:
        if given is not None and given.strip():
            return given.strip()
        if self.interactive:
            hint = f" [{default}]" if default else ""
            answer = input(f"{prompt}{hint}: ").strip()
            if answer or default is not None:
                return answer or default or ""
            return self.one(None, prompt, flag, default)
        if default is not None:
            return default
        raise UserError(
            f"missing {flag}: stdin is not a terminal, so pass every field as a flag ({flag} ...)"
        )

    def many(self, given: list[str] | None, prompt: str) -> list[str]:
        if given:
            return [g.strip() for g in given if g.strip()]
        if not self.interactive:
            return []
        echo(f"{prompt} (one per line, an empty line to finish):")
        out = []
        while line := input("  - ").strip():
            out.append(line)
        return out


def write_new(out: Path, text: str, force: bool) -> None:
    """Write a new file the user asked for; an existing one only with --force."""
    make_folder_for("--out", out)  # a folder as --out, or a file above it: one line, before the question
    if out.exists() and not force:
        raise UserError(f"{out} already exists; pass --force to overwrite it or --out to choose another file")
    write_output(out, text)
