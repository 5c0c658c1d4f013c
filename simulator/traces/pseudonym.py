"""Identifiers that redaction would change, kept distinct: a keyed pseudonym in place of the placeholder.

Redaction turns every phone-shaped or email-shaped run into one placeholder, which is right for a
message and wrong for an identifier: `user-07700900123` and `user-07700900456` both become
`user-[PHONE]`, so two patients' conversations (grouped by `gen_ai.conversation.id` or `session.id`)
would merge into one transcript, and all users (`user.id`, the drift intervals' clusters) into one. An
identifier whose text the redactor changes is therefore written as its redacted text plus a keyed hash of
the original (`user-[PHONE]~4f1c0a9be2d3`): distinct ids stay distinct, equal ids stay equal, and the
original cannot be recovered without the key (an unkeyed hash of a phone number is reversed by trying
every number). An identifier redaction leaves alone is kept as it is, so keys without personal data still
join labels and exports.

The key is 32 random bytes. `simulator collect` keeps it in its state folder (a restart must group a
conversation's later spans with its earlier ones); `simulator import` takes `--pseudonym-key FILE` for
pseudonyms that agree across imports and with a collector, else draws a fresh key per import.
"""

from __future__ import annotations

__all__ = ["IDENTIFIER_ATTRIBUTES", "KEY_BYTES", "Pseudonyms", "load_key"]

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

from simulator.errors import UserError
from simulator.readers import missing
from simulator.safefiles import FileRefused, read_capped, write_atomic
from simulator.traces.otlp import CONVERSATION_KEYS
from simulator.traces.redact import Redactor

# Span attributes that name who or which conversation, read to group spans (otlp.own_key, signals._user).
IDENTIFIER_ATTRIBUTES = (*CONVERSATION_KEYS, "user.id", "enduser.id")
KEY_BYTES = 32
MAX_KEY_FILE_BYTES = 4096
DIGEST_CHARS = 12  # 48 bits: a chance collision needs about 16 million distinct ids


class Pseudonyms:
    """Identifiers redacted into keyed pseudonyms (the redactor counts what it found, as for any text)."""

    def __init__(self, redactor: Redactor, key: bytes, attributes: tuple[str, ...] = IDENTIFIER_ATTRIBUTES):
        self.redactor = redactor
        self.key = key
        self.attributes = frozenset(attributes)

    def of(self, identifier: str) -> str:
        """The identifier as it may be written: itself when redaction leaves it alone, else a pseudonym."""
        redacted = self.redactor.text(identifier)
        if redacted == identifier:
            return identifier
        digest = hmac.new(self.key, identifier.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"{redacted}~{digest[:DIGEST_CHARS]}"

    def attributes_of(self, attributes: dict[str, Any]) -> dict[str, Any]:
        """Attributes redacted, with the identifier attributes (any value type) pseudonymised instead."""
        if not self.attributes.intersection(attributes):
            return self.redactor.value(attributes)
        out: dict[str, Any] = {}
        for name, value in attributes.items():
            if (
                name in self.attributes
                and isinstance(value, str | int | float)
                and not isinstance(value, bool)
            ):
                text = str(value)
                pseudonym = self.of(text)
                out[name] = value if pseudonym == text else pseudonym  # left alone: its type kept
            else:
                out[self.redactor.text(name)] = self.redactor.value(value)
        return out


def load_key(path: Path, *, create: bool) -> bytes:
    """The pseudonym key in `path` (raw bytes); made (owner-only, 0600) when missing and `create`."""
    if missing(path):
        if not create:
            raise UserError(
                f"--pseudonym-key {path}: no such file; name the key file of an earlier import or of "
                "a collector (its state folder's pseudonym.key), or leave the option out for a fresh key"
            )
        key = os.urandom(KEY_BYTES)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, key, mode=0o600)  # owner-only from its first byte, never chmod-ed after
        return key
    try:
        key = read_capped(path, MAX_KEY_FILE_BYTES, "name the key file a collector or an import made")
    except FileRefused as exc:
        raise UserError(f"pseudonym key {path}: {exc}") from None
    if len(key) < 16:
        raise UserError(
            f"pseudonym key {path}: holds {len(key)} bytes, too short for a key (16 or more); "
            "name the key file a collector or an earlier import made"
        )
    return key
