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
    "redact_text",
    "redact_url",
    "register_secrets",
    "suite_secrets",
    "url_secrets",
]

import base64
import html
import json
import os
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from simulator.config.suite import Suite

REDACTED = "[redacted]"
# Shorter values cannot be told from ordinary text (a header `X-Debug: 1`); they are not treated as secrets.
MIN_SECRET_CHARS = 4
DEFAULT_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# The secrets of this process and their encoded forms, longest first (a value holding another is replaced
# whole).
_secrets: list[str] = []


def url_secrets(url: str | None) -> set[str]:
    """The secrets a URL carries: the password of its userinfo (`https://user:pass@host`), the userinfo
    whole, and every query-string value (`?token=...`): a bot URL's query is where tokens are put."""
    if not url:
        return set()
    try:
        parts = urlsplit(url)
    except ValueError:
        return set()
    values = {value for _, value in parse_qsl(parts.query, keep_blank_values=False)}
    if parts.password:
        values |= {parts.password, unquote(parts.password), f"{parts.username or ''}:{parts.password}"}
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        values.add(userinfo)
    return {v for v in values if len(v.strip()) >= MIN_SECRET_CHARS}


def redact_url(url: str) -> str:
    """`url` with its userinfo password and every query-string value replaced by `[redacted]` (a `${VAR}`
    template is kept: it names a variable, not its value)."""
    if "${" in url:
        return url
    redacted = url
    for secret in sorted(url_secrets(url), key=len, reverse=True):
        for form in (secret, quote(secret, safe=""), quote(secret)):
            redacted = redacted.replace(form, REDACTED)
    return redacted


def suite_secrets(suite: Suite, environ: dict[str, str] | None = None) -> set[str]:
    """Every secret value a run of `suite` could send somewhere, read from the environment now: header
    values, provider keys, and what the bot URL and provider base URLs carry (`url_secrets`)."""
    env = dict(os.environ) if environ is None else environ
    values: set[str] = set()
    if suite.bot.type == "http":
        for template in suite.bot.headers.values():
            names = _VAR.findall(template)
            values.update(env[name] for name in names if name in env)
            values.add(_VAR.sub(lambda m: env.get(m.group(1), ""), template))
        url = _VAR.sub(lambda m: env.get(m.group(1), ""), suite.bot.url)
        values.update(env[name] for name in _VAR.findall(suite.bot.url) if name in env)
        values |= url_secrets(url)
    # Another bot's URLs (an openai_endpoint's base_url, a whatsapp webhook) may carry a password or token too.
    for attribute in ("base_url", "webhook_url", "state_url"):
        other = getattr(suite.bot, attribute, None)
        if isinstance(other, str):
            values |= url_secrets(other)
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
    for settings in suite.providers.values():
        values |= url_secrets(settings.base_url)
    return {v for v in values if len(v.strip()) >= MIN_SECRET_CHARS}


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
