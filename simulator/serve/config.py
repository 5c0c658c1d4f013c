"""What the desk serves and where it may write: the runs folder, the scenarios and judges folders, its own
data folder (sign-offs)."""

from __future__ import annotations

__all__ = [
    "MAX_BODY_BYTES",
    "NAME",
    "DeskConfig",
    "access_token",
    "child_folder",
    "inside",
    "name_problem",
]

import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import UserError

LOCAL_HOSTS = ("127.0.0.1", "localhost")


def access_token(host: str, variable: str) -> str | None:
    """The access token a server bound to `host` asks for (the desk's, the collector's): none on loopback;
    the environment `variable`'s, or a new one (printed once, to whoever started the server). Registered as
    a secret either way: a trace, a label, a log line or a traceback that quotes it is written with
    `[redacted]` in its place, like any other key the process knows."""
    if host in LOCAL_HOSTS:
        return None
    token = os.environ.get(variable) or secrets.token_urlsafe(24)
    from simulator.record.redact import register_secrets

    register_secrets([token])
    return token


# A run folder's or file's name as the desk accepts it in a URL: no separators, no leading dot.
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.#-]*$")
# The largest request body the desk reads (`serve --max-body`): forms, labels and edited files are a few
# hundred kilobytes at most.
MAX_BODY_BYTES = 2_000_000


@dataclass
class DeskConfig:
    """The folders the desk reads and writes, and the access token it asks for (None on loopback)."""

    runs_dir: Path
    scenarios_dir: Path | None = None
    judges_dir: Path | None = None
    token: str | None = None
    # Proposals of `simulator propose` (proposals/<run-id>/); review decisions on them are appended to the
    # desk's own data folder (`data_folder`), never the run folder, never the proposal file.
    proposals_dir: Path = field(default_factory=lambda: Path("proposals"))
    # Host names the desk answers to (the Host header): loopback names by default, so a web page on another
    # site cannot reach the desk through DNS rebinding. "*" when serving other hosts behind the token.
    allowed_hosts: list[str] = field(default_factory=lambda: ["127.0.0.1", "localhost"])
    # The hazard log the safety-case pages judge runs against (`serve --hazards`).
    hazards: Path | None = None
    # The desk's own records (sign-offs, proposal reviews, the clinician queue), never inside a run folder;
    # default `<runs>/.desk`.
    data_dir: Path | None = None
    # The review queue of drafted vignettes (`simulator draft --queue`) and the suite an accepted draft
    # joins (`serve --drafts DIR --suite SUITE`): only what a reviewer accepts is written into its scenarios.
    drafts_dir: Path | None = None
    drafts_suite: Path | None = None
    # The cap on every request body (bodylimit.py), counted while the body arrives.
    max_body: int = MAX_BODY_BYTES

    @property
    def data_folder(self) -> Path:
        """Where the desk keeps its own records: derived documents never write into run folders."""
        return self.data_dir if self.data_dir is not None else self.runs_dir / ".desk"

    def folders(self) -> dict[str, Path]:
        """The editable folders by area name ("scenarios", "judges")."""
        found = {"scenarios": self.scenarios_dir, "judges": self.judges_dir}
        return {name: path for name, path in found.items() if path is not None}


# What a file system takes in a name a request gives (a run, a file to edit, a draft): a part of at most
# 255 bytes (NAME_MAX of Linux, macOS and Windows), a whole name of at most 1,024 bytes (macOS's PATH_MAX; the
# folder it is joined to stays under Linux's 4,096) and 32 folders deep. Past these the OS answers "File name
# too long" from the first stat, which a page must never meet.
MAX_PART_BYTES = 255
MAX_PATH_BYTES = 1024
MAX_DEPTH = 32


def _shown(name: str) -> str:
    """`name` as an error line quotes it: lone surrogates as escapes (UTF-8 cannot carry them to the page),
    a long one cut."""
    text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 60 else f"{text[:40]}… ({len(name):,} characters)"


def name_problem(relative: str) -> str | None:
    """Why the file system cannot take `relative` as a name under a folder (one line with the fix), or None:
    a NUL, a lone surrogate, a part over 255 bytes, over 1,024 bytes in all or over 32 folders deep."""
    if "\x00" in relative:
        return "holds a NUL character, which no file name can; remove it"
    try:
        encoded = relative.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (half of a UTF-16 pair), which no file name can; remove it"
    parts = encoded.split(b"/")
    if len(parts) > MAX_DEPTH:
        return f"is {len(parts):,} folders deep; name a file at most {MAX_DEPTH} deep"
    if len(encoded) > MAX_PATH_BYTES:
        return f"is {len(encoded):,} bytes long; a name here is at most {MAX_PATH_BYTES:,}"
    longest = max(len(part) for part in parts)
    if longest > MAX_PART_BYTES:
        return f"has a part of {longest:,} bytes; a file or folder name is at most {MAX_PART_BYTES}"
    return None


def inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing anything that would leave `root` (.., absolute paths, symlinks out) and any
    name the file system cannot take (`name_problem`): the one door from a request's name to a path."""
    if not relative or relative.startswith(("/", "\\")) or ".." in Path(relative).parts:
        raise UserError(f"'{_shown(relative)}': not a path inside {root}; name a file under that folder")
    problem = name_problem(relative)
    if problem is not None:
        raise UserError(f"'{_shown(relative)}': {problem}")
    base = root.resolve()
    try:
        target = (base / relative).resolve()
    except (OSError, RuntimeError):  # a symbolic link loop on the way (Python 3.11 raises RuntimeError)
        raise UserError(f"'{_shown(relative)}': leads through a symbolic link loop; name another") from None
    if target != base and base not in target.parents:
        raise UserError(f"'{_shown(relative)}': not a path inside {root}; name a file under that folder")
    return target


def child_folder(root: Path, name: str) -> Path:
    """The folder `name` directly under `root` (a run folder); refuses any other name."""
    if not NAME.match(name) or name in (".", ".."):
        raise UserError(f"'{_shown(name)}': not a run folder name")
    return inside(root, name)
