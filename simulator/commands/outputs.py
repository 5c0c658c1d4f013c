"""Checks on the files a command is asked to write, made before any work so a mistake costs nothing."""

from __future__ import annotations

__all__ = ["at_least_one", "check_output"]

import argparse
from pathlib import Path

from simulator.errors import UserError


def check_output(flag: str, path: Path | None) -> None:
    """`--html F` and friends: F must be a file in an existing folder, never a folder itself."""
    if path is None:
        return
    if path.is_dir():
        raise UserError(f"{flag} {path}: that is a folder; name a file, e.g. {path / 'report'}")
    parent = path.parent
    if not parent.is_dir():
        what = "is a file, not a folder" if parent.exists() else "does not exist"
        raise UserError(f"{flag} {path}: the folder {parent} {what}; create it first or name another path")


def at_least_one(value: str) -> int:
    """A count flag (`--concurrency`, `--runs`): a whole number of at least 1, blamed on the flag itself."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {number})")
    return number


def not_empty(value: str) -> str:
    """A flag's text (`--user-model`, `--judge-model`): empty is refused, never silently ignored."""
    if not value.strip():
        raise argparse.ArgumentTypeError("is empty; give a value, or leave the flag out")
    return value


def tag_list(value: str) -> list[str]:
    """`--tags a,b`: the tags, each stripped; a list with no tag (`''`, `,,,`) is refused, not taken as
    every scenario."""
    tags = [tag.strip() for tag in value.split(",") if tag.strip()]
    if not tags:
        raise argparse.ArgumentTypeError(f"'{value}' names no tag; write --tags a,b (or leave the flag out)")
    return tags


def write_output(path: Path, text: str) -> None:
    """Write a file a flag named (`--json`, `--out`, `--markdown`): a full disk or a read-only folder is one
    line naming this path (simulator/diskerrors.py), never a traceback."""
    from simulator.diskerrors import naming

    with naming(path):
        path.write_text(text, encoding="utf-8")
