"""The run record: `runs/<id>/` with a manifest written first and JSON lines appended as work finishes."""

from __future__ import annotations

__all__ = [
    "CONVERSATIONS",
    "MANIFEST",
    "VERDICTS",
    "Manifest",
    "RunFolder",
    "git_commit",
    "new_run_id",
    "read_jsonl",
    "sha256_file",
    "sha256_text",
]

import hashlib
import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simulator import __version__
from simulator.errors import UserError
from simulator.records import SCHEMA_VERSION, ConversationRecord, Verdict

MANIFEST = "manifest.json"
CONVERSATIONS = "conversations.jsonl"
VERDICTS = "verdicts.jsonl"

T = TypeVar("T", bound=BaseModel)


def sha256_text(text: str) -> str:
    """A content hash tagged with its algorithm, as stored in manifests."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def git_commit(cwd: Path | None = None) -> str | None:
    """The current git commit of the project the user runs from, when there is one."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def new_run_id(name: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40]
    return f"{stamp}-{safe}-{secrets.token_hex(2)}"


class Manifest(BaseModel):
    """What was run and how: enough to reproduce and compare it. Never holds a secret."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    kind: Literal["simulation", "golden"] = "simulation"
    run_id: str
    status: Literal["running", "complete", "interrupted", "aborted"] = "running"
    created_at: datetime
    ended_at: datetime | None = None
    package_version: str = __version__
    git_commit: str | None = None
    suite_file: str | None = None
    suite_hash: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    scenarios: list[dict[str, Any]] = Field(default_factory=list)
    prompts: dict[str, dict[str, str]] = Field(default_factory=dict)
    planned: int = 0
    counts: dict[str, Any] = Field(default_factory=dict)
    judges: dict[str, Any] = Field(default_factory=dict)
    resumed_at: list[datetime] = Field(default_factory=list)


def read_jsonl(path: Path, model: type[T]) -> Iterator[T]:
    """Records of a JSON-lines file; a half-written last line (a crash mid-write) is skipped, not fatal."""
    if not path.exists():
        return
    with path.open("r", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith("\n"):
                return  # the writer died mid-line: the record never finished
            if not line.strip():
                continue
            try:
                yield model.model_validate_json(line)
            except ValidationError as exc:
                raise UserError(
                    f"{path}:{number}: not a valid {model.__name__} record ({exc.error_count()} "
                    f"errors); the file was edited or written by another version"
                ) from exc


def _truncate_partial_line(path: Path) -> None:
    """Cut a trailing half line so new records start on a line of their own."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return
        handle.truncate(data.rfind(b"\n") + 1)


class RunFolder:
    """One run's folder: create or reopen it, append records, update the manifest's status."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @classmethod
    def create(cls, path: Path, manifest: Manifest) -> RunFolder:
        if path.exists() and any(path.iterdir()):
            raise UserError(f"{path} already holds a run; use --resume {path} to finish it, or another --out")
        path.mkdir(parents=True, exist_ok=True)
        folder = cls(path)
        folder.write_manifest(manifest)
        return folder

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        if not (path / MANIFEST).is_file():
            raise UserError(f"{path} is not a run folder (no {MANIFEST}); pass runs/<run-id>")
        folder = cls(path)
        for name in (CONVERSATIONS, VERDICTS):
            _truncate_partial_line(path / name)
        return folder

    def read_manifest(self) -> Manifest:
        try:
            return Manifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as exc:
            raise UserError(f"{self.manifest_path}: unreadable manifest ({exc})") from exc

    def write_manifest(self, manifest: Manifest) -> None:
        # Write then rename, so a crash never leaves a half-written manifest.
        tmp = self.manifest_path.with_suffix(".json.tmp")
        tmp.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        os.replace(tmp, self.manifest_path)

    def append(self, name: str, records: list[BaseModel]) -> None:
        """Append whole lines and flush, so a finished record survives a crash of the process."""
        if not records:
            return
        text = "".join(record.model_dump_json(exclude_none=True) + "\n" for record in records)
        with (self.path / name).open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()

    def conversations(self) -> Iterator[ConversationRecord]:
        return read_jsonl(self.path / CONVERSATIONS, ConversationRecord)

    def verdicts(self) -> Iterator[Verdict]:
        return read_jsonl(self.path / VERDICTS, Verdict)


def to_jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
