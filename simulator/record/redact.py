"""Secrets never written: every configured secret value is replaced by `[redacted]` wherever text is written.

A bot that echoes its request headers, a provider error that quotes a key, a raw exchange: whatever carries
a secret, it passes through `dump_line` (every run-record line), the CLI's error line or a report renderer on
its way out, and each of those calls `redact`. The secrets are the values, not the names: whatever the suite's
fields declare (simulator/config/secrets.py: expanded `${VAR}` header values and each variable's value, literal
header values, the passwords and query values of URLs, the keys that `*_env` fields name) and the default API
key variables of the providers.
"""

from __future__ import annotations

__all__ = [
    "contains_secret",
    "forget_secrets",
    "redact",
    "redact_text",
    "redacted_suite",
    "register_secrets",
    "suite_secrets",
]

import base64
import html
import json
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from simulator.config.secrets import MIN_SECRET_CHARS, REDACTED, declared_secrets, record_form
from simulator.config.suite import Suite

DEFAULT_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")

# The secrets of this process and their encoded forms, longest first (a value holding another is replaced
# whole).
_secrets: list[str] = []


def suite_secrets(suite: Suite, environ: dict[str, str] | None = None) -> set[str]:
    """Every secret value a run of `suite` could send somewhere, read from the environment now: what the
    suite's fields declare (config/secrets.py: a bot's headers, URLs and key variables, a started bot's
    ${VAR}s, each provider's key and base URL) and the providers' default key variables."""
    env = dict(os.environ) if environ is None else environ
    values = declared_secrets(suite, env)
    values.update(env[name] for name in DEFAULT_KEY_VARIABLES if name in env)
    return {v for v in values if len(v.strip()) >= MIN_SECRET_CHARS}


def redacted_suite(suite: Suite) -> Suite:
    """The suite as the manifest keeps it: each declared field in its record form (`${VAR}` templates kept,
    as they name a variable, not its value; literal header values and URL passwords and query values
    replaced by `[redacted]`)."""
    copy = suite.model_copy(deep=True)
    record_form(copy)
    return copy


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 and base64url text a secret's bytes produce wherever they sit inside a longer encoded
    value (`Basic base64(user:pass)`): for each of the three alignments, the characters only its bytes fix."""
    cores: set[str] = set()
    for offset in range(3):
        padded = b"\0" * offset + raw
        start, end = (offset * 4 + 2) // 3, len(padded) * 4 // 3
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            core = encode(padded).decode("ascii")[start:end]
            if len(core) >= 2 * MIN_SECRET_CHARS:
                cores.add(core)
    return cores


def _forms(value: str) -> set[str]:
    """A secret as it may be echoed: as is, escaped inside JSON text (a bot that echoes its headers as JSON),
    percent-encoded (in a URL; either case of hex, every byte or only the unsafe ones), base64 and
    base64url (at any alignment), hex in either case, and HTML-escaped or written as numeric entities."""
    raw = value.encode("utf-8")
    return {
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        quote(value, safe=""),
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value, safe="")),
        "".join(f"%{b:02X}" for b in raw),
        "".join(f"%{b:02x}" for b in raw),
        raw.hex(),
        raw.hex().upper(),
        html.escape(value),
        "".join(f"&#{ord(c)};" for c in value),
        "".join(f"&#x{ord(c):x};" for c in value),
        "".join(f"&#x{ord(c):X};" for c in value),
        *_base64_cores(raw),
    }


def register_secrets(values: Iterable[str]) -> None:
    """Add secret values for this process: from now on nothing written holds them, in any of their forms."""
    known = set(_secrets)
    for value in values:
        if len(value.strip()) >= MIN_SECRET_CHARS:
            known |= _forms(value)
    _secrets[:] = sorted(known, key=len, reverse=True)


def forget_secrets() -> None:
    """Forget every registered secret (for a program that runs several suites, and for tests)."""
    _secrets.clear()


def contains_secret(text: str) -> bool:
    """Whether `text` (plain or JSON) holds a registered secret: a cheap check before any rewriting. Inside
    JSON text a secret appears escaped, which is one of its registered forms."""
    return any(secret in text for secret in _secrets)


def redact_text(text: str) -> str:
    """`text` with every registered secret replaced (the response cache stores answers through this)."""
    return redact(text) if contains_secret(text) else text


def redact(value: Any) -> Any:
    """`value` with every registered secret replaced by `[redacted]`, recursively through dicts (keys too)
    and lists; anything that is not text is returned as it is."""
    if not _secrets:
        return value
    if isinstance(value, str):
        for secret in _secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value
