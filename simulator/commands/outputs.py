"""Checks on the files a command is asked to write, made before any work so a mistake costs nothing."""

from __future__ import annotations

__all__ = ["at_least_one", "check_output"]

import argparse
from collections.abc import Callable
from pathlib import Path

from simulator.errors import UserError


def check_output(flag: str, path: Path | None) -> None:
    """`--html F` and friends: F must be a file in an existing folder, never a folder itself, never one of
    a run folder's own files, and an existing file is replaced only if it holds what the flag writes (an
    earlier report): `report RUN --json RUN/conversations.jsonl` wrote over the run's records, and `--junit
    suite.yaml` over a suite."""
    if path is None:
        return
    if path.is_dir():
        raise UserError(f"{flag} {path}: that is a folder; name a file, e.g. {path / 'report'}")
    parent = path.parent
    if not parent.is_dir():
        what = "is a file, not a folder" if parent.exists() else "does not exist"
        raise UserError(f"{flag} {path}: the folder {parent} {what}; create it first or name another path")
    refused_in_run_folder(flag, path)
    kind = _KINDS.get(flag)
    if kind is not None and (path.is_file() or path.is_symlink()):
        name, looks_like = kind
        if not looks_like(_head(path)):
            raise UserError(
                f"{flag} {path}: the file exists and does not hold {name} (an earlier report would); "
                "name another file, or remove it first if it is yours to replace"
            )


def make_folder_for(flag: str, path: Path) -> None:
    """Create the folders above a new file `path` (`new ... --out a/b/c.yaml`); a file where a folder goes,
    a folder where the file goes or a folder that cannot be made is one line naming the flag, never
    Python's FileExistsError, NotADirectoryError or IsADirectoryError."""
    if path.is_dir():
        raise UserError(f"{flag} {path}: that is a folder; name a file in it, e.g. {path / 'new.yaml'}")
    blocking = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise UserError(f"{flag} {path}: {blocking} is a file, not a folder; name another path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot create the folder {path.parent} ({exc.strerror})") from None


def refused_in_run_folder(flag: str, path: Path) -> None:
    """A run folder's own files (its manifest, its records, hidden files) are never an output's target."""
    from simulator.record.folder import MANIFEST

    if not (path.parent / MANIFEST).is_file():
        return
    if path.name == MANIFEST or path.suffix == ".jsonl" or path.name.startswith("."):
        raise UserError(
            f"{flag} {path}: that is one of the run folder's own files; name a file outside the run's "
            "records (for example beside the run folder)"
        )


def _head(path: Path) -> str:
    """The first bytes of `path` as text (BOM and leading blanks dropped); '' when it cannot be read."""
    try:
        with path.open("rb") as handle:
            return handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return ""


def _one_json_document(head: str) -> bool:
    """An earlier JSON report: an object or a list, written indented (its first line holds no whole value),
    never JSON Lines (a run's records: a whole object on each line)."""
    first_line = head.split("\n", 1)[0].strip()
    return head[:1] in "{[" and head != "" and first_line in ("{", "[")


_KINDS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "--html": ("an HTML page", lambda head: head == "" or head[:1] == "<"),
    "--junit": ("JUnit XML", lambda head: head == "" or head[:1] == "<"),
    "--json": ("a JSON report", lambda head: head == "" or _one_json_document(head)),
}


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

    refused_in_run_folder(
        "the output", path
    )  # the last line of defence; check_output says it before any work
    with naming(path):
        path.write_text(text, encoding="utf-8")
