"""Secrets never written: every configured secret value is replaced by `[redacted]` wherever text is written.

A bot that echoes its request headers, a provider error that quotes a key, a raw exchange: whatever carries
a secret, it passes through `dump_line` (every run-record line), the CLI's error line or a report renderer on
its way out, and each of those calls `redact`. The secrets are the values, not the names: the expanded
`${VAR}` header values (and each variable's value on its own), literal header values, and the API key of
every provider the suite configures (`api_key_env`, or the provider's default variable).
"""

from __future__ import annotations

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "contains_secret",
    "forget_secrets",
    "redact",
    "register_secrets",
    "suite_secrets",
]

import json
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from simulator.spec.suite import Suite

REDACTED = "[redacted]"
# Shorter values cannot be told from ordinary text (a header `X-Debug: 1`); they are not treated as secrets.
MIN_SECRET_CHARS = 4
DEFAULT_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# The secrets of this process and their encoded forms, longest first (a value holding another is replaced
# whole).
_secrets: list[str] = []


def suite_secrets(suite: Suite, environ: dict[str, str] | None = None) -> set[str]:
    """Every secret value a run of `suite` could send somewhere, read from the environment now."""
    env = dict(os.environ) if environ is None else environ
    values: set[str] = set()
    if suite.bot.type == "http":
        for template in suite.bot.headers.values():
            names = _VAR.findall(template)
            values.update(env[name] for name in names if name in env)
            values.add(_VAR.sub(lambda m: env.get(m.group(1), ""), template))
    start = getattr(suite.bot, "start", None)  # a started bot's env may name secrets as ${VAR}
    for template in start.env.values() if start is not None else ():
        values.update(env[name] for name in _VAR.findall(template) if name in env)
    variables = set(DEFAULT_KEY_VARIABLES)
    # A whatsapp bot's app secret, access and verify tokens; an openai_endpoint bot's key.
    for attribute in ("app_secret_env", "access_token_env", "verify_token_env", "api_key_env"):
        name = getattr(suite.bot, attribute, None)
        if isinstance(name, str):
            variables.add(name)
    variables.update(s.api_key_env for s in suite.providers.values() if s.api_key_env)
    values.update(env[name] for name in variables if name in env)
    return {v for v in values if len(v.strip()) >= MIN_SECRET_CHARS}


def _forms(value: str) -> set[str]:
    """A secret as it may be echoed: as is, escaped inside JSON text (a bot that echoes its headers as JSON),
    and percent-encoded (in a URL)."""
    return {
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        quote(value, safe=""),
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
