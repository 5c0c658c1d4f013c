"""Secrets by declaration: a config field that carries a secret says so in its type, and one walk over any
config finds every secret value (to redact from everything written) and the form the manifest keeps.

    api_key_env: Annotated[str | None, SecretEnv] = None         # names a variable whose value is secret
    base_url: Annotated[str, SecretURL]                           # its password and query values are secret
    headers: Annotated[dict[str, str], SecretTemplate] = {}       # `Bearer ${TOKEN}`: a template, or literal
    env: Annotated[dict[str, str], SecretVariables] = {}          # only the ${VAR} values it names are secret

A declaration applies to a text field, to each value of a mapping and to each item of a list; models nested
inside a config are walked too. A bot kind's fields are checked by a test: a text field whose name looks
secret-bearing (url, token, key, secret, password, auth, header) must carry a declaration.
"""

from __future__ import annotations

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "Secret",
    "SecretEnv",
    "SecretTemplate",
    "SecretURL",
    "SecretVariables",
    "declared_secrets",
    "record_form",
    "redact_url",
    "secret_of",
    "url_secrets",
]

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from pydantic import BaseModel
from pydantic.fields import FieldInfo

REDACTED = "[redacted]"
# Shorter values cannot be told from ordinary text (a header `X-Debug: 1`); they are not treated as secrets.
MIN_SECRET_CHARS = 4
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


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


def _variables(text: str, env: Mapping[str, str]) -> set[str]:
    """The values of the `${VAR}` variables `text` names that are set."""
    return {env[name] for name in _VAR.findall(text) if name in env}


def _expand(text: str, env: Mapping[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1), ""), text)


class Secret:
    """How a field carries a secret: which values a run must never write (`secrets`), and the form of the
    field the manifest keeps (`record`). The four declarations below are the instances to use."""

    def __init__(
        self,
        name: str,
        secrets: Callable[[str, Mapping[str, str]], set[str]],
        record: Callable[[str], str],
    ) -> None:
        self.name = name
        self.secrets = secrets
        self.record = record

    def __repr__(self) -> str:
        return self.name


# The field names an environment variable; its value is the secret (the manifest keeps the name).
SecretEnv = Secret("SecretEnv", lambda name, env: {env[name]} if name in env else set(), lambda name: name)
# A URL: the values of the variables it names, and its userinfo and query values once expanded; the manifest
# keeps it with those replaced.
SecretURL = Secret(
    "SecretURL", lambda url, env: _variables(url, env) | url_secrets(_expand(url, env)), redact_url
)
# Text that may name variables as ${VAR} (a header value): the variables' values and the whole expanded
# text are secret; the manifest keeps a template and replaces text written literally.
SecretTemplate = Secret(
    "SecretTemplate",
    lambda text, env: _variables(text, env) | {_expand(text, env)},
    lambda text: text if "${" in text else REDACTED,
)
# Text that may name variables as ${VAR} among ordinary words (a started bot's environment): only the
# variables' values are secret; the manifest keeps the text as written.
SecretVariables = Secret("SecretVariables", _variables, lambda text: text)


def secret_of(info: FieldInfo) -> Secret | None:
    """The declaration a field carries, if any."""
    return next((m for m in info.metadata if isinstance(m, Secret)), None)


def _texts(value: Any) -> Iterator[str]:
    """The text a declared field holds: itself, a mapping's values, a list's items."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        yield from (v for v in value.values() if isinstance(v, str))
    elif isinstance(value, list | tuple):
        yield from (v for v in value if isinstance(v, str))


def _models_in(value: Any) -> Iterator[BaseModel]:
    if isinstance(value, BaseModel):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _models_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _models_in(item)


def declared_secrets(config: BaseModel, env: Mapping[str, str]) -> set[str]:
    """Every secret value `config` (and every model inside it) declares, read from `env` now."""
    found: set[str] = set()
    for name, info in type(config).model_fields.items():
        value = getattr(config, name)
        secret = secret_of(info)
        if secret is not None:
            for text in _texts(value):
                found |= secret.secrets(text, env)
        for inner in _models_in(value):
            found |= declared_secrets(inner, env)
    return found


def record_form(config: BaseModel) -> None:
    """Put `config` (in place: give it a copy) and every model inside it in the form the manifest keeps:
    each declared field as its declaration records it."""
    for name, info in type(config).model_fields.items():
        value = getattr(config, name)
        secret = secret_of(info)
        if secret is not None:
            if isinstance(value, str):
                setattr(config, name, secret.record(value))
            elif isinstance(value, dict):
                setattr(
                    config, name, {k: secret.record(v) if isinstance(v, str) else v for k, v in value.items()}
                )
            elif isinstance(value, list):
                setattr(config, name, [secret.record(v) if isinstance(v, str) else v for v in value])
        for inner in _models_in(value):
            record_form(inner)
