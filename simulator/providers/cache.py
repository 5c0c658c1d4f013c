"""The response cache: SQLite, opt-in per role, keyed by everything that changes a model's output."""

from __future__ import annotations

__all__ = ["CACHE_KEY_VERSION", "ResponseCache", "cache_key"]

import hashlib
import json
import time
from pathlib import Path

from simulator.errors import UserError
from simulator.providers.base import ModelRequest, ModelResponse
from simulator.record.redact import redact_text

# Bump when the key's inputs or the stored response's shape change: old entries then simply miss.
CACHE_KEY_VERSION = 1

# Request fields that do not change the output (a provider-side caching hint); everything else is keyed.
_NOT_KEYED = {"cacheable_prefix_messages"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at REAL NOT NULL,
    response TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def cache_key(
    provider: str,
    base_url: str | None,
    request: ModelRequest,
    repeat: int,
    attempt: int = 0,
    sample: int = 0,
) -> str:
    """A versioned hash of provider, base URL, the whole request and the sample it belongs to.

    The request is a pydantic model of exactly what reaches the model (model, system, messages,
    temperature, max tokens, schema, tools), so a field added to it later is keyed automatically. Nothing
    that varies between identical calls (request ids, timestamps, retries) is part of it. `repeat` is the
    scenario repeat and `attempt` the retry of a conversation after the user broke character: each is a
    separate sample, which a cache must not collapse into one. `sample` is the judge's repeat of one
    identical request (`simulator judge --samples k`); it joins the key only when non-zero, so the keys of
    single judgements stay what they were.
    """
    body = {
        "v": CACHE_KEY_VERSION,
        "provider": provider,
        "base_url": base_url,
        "request": request.model_dump(mode="json", exclude=_NOT_KEYED),
        "repeat": repeat,
        "attempt": attempt,
    }
    if sample:
        body["sample"] = sample
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"v{CACHE_KEY_VERSION}:sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses stored as JSON in one SQLite file (WAL, so several runs may share it); never pickle."""

    def __init__(self, path: Path) -> None:
        import sqlite3  # here, not at the top: a run without the cache never loads it (nor `cache_key`'s users)

        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            self._db.execute(
                "INSERT OR IGNORE INTO meta(name, value) VALUES ('key_version', ?)", (str(CACHE_KEY_VERSION),)
            )
        except sqlite3.Error as exc:
            raise UserError(
                f"{path}: cannot open the response cache ({exc}); fix or delete the file"
            ) from exc
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> ModelResponse | None:
        """The stored response for a key, marked `cached`, or None."""
        row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        response = ModelResponse.model_validate_json(row[0])
        response.cached = True
        return response

    def put(self, key: str, provider: str, role: str, response: ModelResponse) -> None:
        """Store a fresh response; its raw exchange is replaced by the key (raw bodies would bloat the file)."""
        stored = response.model_copy(update={"raw": {"cache_key": key}, "cached": False})
        self._db.execute(
            "INSERT OR REPLACE INTO responses(key, provider, model, role, created_at, response) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (key, provider, response.model, role, time.time(), redact_text(stored.model_dump_json())),
        )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()
