"""What the desk serves and where it may write: the runs folder, the scenarios and judges folders, its own
data folder (sign-offs)."""

from __future__ import annotations

__all__ = ["LOCAL_HOSTS", "MAX_BODY_BYTES", "NAME", "DeskConfig", "child_folder", "inside"]

import re
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import UserError

LOCAL_HOSTS = ("127.0.0.1", "localhost")
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


def inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing anything that would leave `root` (.., absolute paths, symlinks out)."""
    if not relative or "\x00" in relative or relative.startswith(("/", "\\")) or ".." in Path(relative).parts:
        raise UserError(f"'{relative}': not a path inside {root}; name a file under that folder")
    base = root.resolve()
    target = (base / relative).resolve()
    if target != base and base not in target.parents:
        raise UserError(f"'{relative}': not a path inside {root}; name a file under that folder")
    return target


def child_folder(root: Path, name: str) -> Path:
    """The folder `name` directly under `root` (a run folder); refuses any other name."""
    if not NAME.match(name) or name in (".", ".."):
        raise UserError(f"'{name}': not a run folder name")
    return inside(root, name)
