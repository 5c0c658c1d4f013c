"""Content hashes tagged with their algorithm (`sha256:...`), as stored in manifests and verdicts."""

from __future__ import annotations

__all__ = ["sha256_file", "sha256_text", "short_hash"]

import hashlib
from pathlib import Path


def sha256_text(text: str) -> str:
    """A content hash tagged with its algorithm, as stored in manifests."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def short_hash(value: str | None, length: int = 12) -> str:
    """`sha256:0123abcd...` shortened for people: the first `length` hex digits."""
    if not value:
        return "(none)"
    return value.split(":", 1)[-1][:length]
