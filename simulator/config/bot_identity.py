"""Which release of the bot was tested: the identity recorded in a run's manifest.

The git commit a manifest records is the simulator's; a safety case needs the bot's. Each bot kind says how
it can be identified (`BotConfig.identity_parts`, config/bot_kinds.py): a declared `bot.version`, the
sha256 of a python bot's source (its module file, or its package's .py files), a started bot's command
and the files it names, a git describe of the folder it runs from, a chat bot's model and prompt. The
identity is the declared version when given, else the first identifying value; two runs pool only when
their whole identities agree (safety/case.py, safety/history.py).

A file is named as the suite names it, never by where this checkout happens to be: a python bot's source
by its module's name (`source sha256 of examples.triage_bot`, as `factory:` writes it), a started bot's
files relative to its folder. So one bot reached from two working folders, or two checkouts, is one
identity, and another module (or other source) is another.
"""

from __future__ import annotations

__all__ = [
    "SOURCE",
    "UNANSWERED",
    "BotIdentity",
    "identify_bot",
    "module_source_hash",
    "started_parts",
    "with_answer",
]

import contextlib
import hashlib
import importlib.util
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.models import StrictModel

if TYPE_CHECKING:
    from simulator.config.bot_kinds import BotConfig

DECLARED = "declared version"
SOURCE = "source sha256 of "  # a python bot's source, then its module's name
UNANSWERED = "did not answer"  # the end of a part's name when the bot's version endpoint failed


class BotIdentity(StrictModel):
    """The bot under test as one run identified it: `version` to show, `parts` (how -> value) to compare."""

    version: str
    parts: dict[str, str]

    def same_as(self, other: BotIdentity | None) -> bool:
        return other is not None and self.compared() == other.compared()

    def compared(self) -> dict[str, str]:
        """The parts two identities compare: a python bot's source hash under one name, since runs made
        before it was named by its module named it by its file's path (relative to the working folder, or
        absolute); the `factory` part still tells two modules apart."""
        return {(SOURCE if k.startswith(SOURCE) else k): v for k, v in self.parts.items()}


def _tree_hash(path: Path) -> str:
    """sha256 over a file, or over a folder's .py files (relative names and bytes, sorted)."""
    digest = hashlib.sha256()
    files = (
        [path] if path.is_file() else sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    )
    for file in files:
        digest.update(str(file.relative_to(path.parent if path.is_file() else path)).encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return "sha256:" + digest.hexdigest()


def module_source_hash(module: str) -> str | None:
    """The sha256 of a python module's source (a package: all its .py files), found unimported; the module
    is named by its name wherever it is found (config/bots: `source sha256 of examples.triage_bot`)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return None
    origin = Path(spec.origin)
    return _tree_hash(origin.parent if spec.submodule_search_locations else origin)


def git_describe(folder: Path) -> str | None:
    """`git describe --always --dirty --tags` of the repository holding `folder`, if it is one."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "describe", "--always", "--dirty", "--tags"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _in_folder(arg: str, cwd: Path) -> str:
    """A command's file argument as the identity names it: an absolute path is written relative to the bot's
    folder (`/home/a/suite/bot.py` started in /home/a/suite is `bot.py`), so two checkouts of one bot, or
    two spellings of one file, are one identity; a relative one stays as written."""
    return os.path.relpath(arg, cwd.absolute()) if Path(arg).is_absolute() else arg


def started_parts(command: Sequence[str], cwd: Path) -> dict[str, str]:
    """A started bot: its command's hash, the hash of each file the command names, its folder's git describe."""
    files = {arg: _in_folder(arg, cwd) for arg in command if "{" not in arg and (cwd / arg).is_file()}
    shown = [files.get(arg, arg) for arg in command]
    parts = {"start command sha256": "sha256:" + hashlib.sha256(json.dumps(shown).encode()).hexdigest()}
    for arg, name in files.items():
        parts[f"sha256 of {name}"] = _tree_hash(cwd / arg)
    described = git_describe(cwd)
    if described:
        parts[f"git describe of {cwd.name or cwd}"] = described
    return parts


def identify_bot(config: BotConfig, base_dir: Path) -> BotIdentity | None:
    """The bot's identity as its kind can give it; None when nothing identifies it (never raises)."""
    parts: dict[str, str] = {}
    if config.version:
        parts[DECLARED] = config.version
    with contextlib.suppress(OSError):  # an unreadable file leaves that part out, never fails a run
        parts.update(config.identity_parts(base_dir))
    if not parts:
        return None
    return BotIdentity(version=config.version or next(iter(parts.values())), parts=parts)


def with_answer(identity: BotIdentity | None, answered: dict[str, str]) -> BotIdentity:
    """The identity with what the running bot answered (its version endpoint) added: the answer is the
    version shown unless the suite declared one."""
    old = identity.parts if identity is not None else {}
    declared = {DECLARED: old[DECLARED]} if DECLARED in old else {}
    parts = {**declared, **answered, **{k: v for k, v in old.items() if k not in answered}}
    shown = [v for k, v in parts.items() if not k.endswith(UNANSWERED)] or ["not identified"]
    return BotIdentity(version=shown[0], parts=parts)
