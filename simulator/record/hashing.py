"""Content hashes tagged with their algorithm (`sha256:...`), as stored in manifests and verdicts."""

from __future__ import annotations

__all__ = ["sha256_file", "sha256_text", "short_hash"]

import hashlib
from pathlib import Path

from simulator.errors import UserError
from simulator.safefiles import WAITS, FileRefused, open_regular


def sha256_text(text: str) -> str:
    """A content hash tagged with its algorithm, as stored in manifests."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    """The file's content hash, read in blocks from a regular file only (a FIFO is refused, never waited
    on: the hash is taken of files a person named)."""
    digest = hashlib.sha256()
    try:
        with open_regular(path) as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except FileRefused as exc:
        raise UserError(f"{path}: {exc}") from None
    except BlockingIOError:
        raise UserError(f"{path}: {WAITS}") from None
    return "sha256:" + digest.hexdigest()


def short_hash(value: str | None, length: int = 12) -> str:
    """`sha256:0123abcd...` shortened for people: the first `length` hex digits."""
    if not value:
        return "(none)"
    return value.split(":", 1)[-1][:length]
