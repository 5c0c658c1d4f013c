"""What the wire accepts, checked before a run: every URL field (declared `SecretURL`) names a host and a
port from 1 to 65535, and every HTTP header (declared `HTTP_HEADERS`) has a token for a name and a value
that can be sent. `validate`, `run`, `new suite` and the run-time expansion of `${VAR}` headers ask here, so
a bad URL or header is one line naming the field, never an HTTP library's exception in every conversation.
"""

from __future__ import annotations

__all__ = ["HTTP_HEADERS", "check_headers", "check_url", "header_problem", "wire_checks"]

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from simulator.config.secrets import SecretURL, redact_url, secret_of
from simulator.errors import UserError

# RFC 9110's token: the characters a header name may hold.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A header value as sent: printable ASCII, spaces and tabs inside (h11 refuses one that starts or ends so).
_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")


class _HeadersDeclaration:
    """Marks a `dict[str, str]` field as HTTP headers (name -> value), checked by `wire_checks`."""

    def __repr__(self) -> str:
        return "HTTP_HEADERS"


HTTP_HEADERS = _HeadersDeclaration()


def check_url(url: str, what: str = "bot url") -> None:
    """A URL names a host and, if any, a port from 1 to 65535, and holds no space or control character
    (a `${VAR}` URL is expanded at run time; `{port}` is the engine's). The error never echoes a secret."""
    if "${" in url:
        return
    shown = redact_url(url)  # a password or a token in the URL is never echoed
    text = url.replace("{port}", "1")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise UserError(
            f"{what} '{shown}' holds a space or a control character; remove it (or write a space as %20)"
        )
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        raise UserError(f"{what} '{shown}' is not a URL; write it as http://HOST:PORT/PATH") from None
    if not host:
        raise UserError(f"{what} '{shown}' names no host; write it as http://HOST:PORT/PATH")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= 65535:
        written = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise UserError(
            f"{what} '{shown}' has the port '{written}'; a port is a number from 1 to 65535, e.g. "
            "http://127.0.0.1:8080/chat"
        )


def header_problem(name: str, value: str) -> str | None:
    """Why a header cannot be sent as written (its value is never quoted: it may be a secret), or None."""
    if not _TOKEN.fullmatch(name):
        return (
            f"header name '{name}' is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~; no spaces or "
            "colons); fix the name"
        )
    if not value.isascii():
        return f"header '{name}' holds non-ASCII characters; HTTP headers must be ASCII: fix the value"
    if any(c in value for c in "\r\n\0"):
        return f"header '{name}' holds a line break or a NUL character; a header value is one line"
    if not _VALUE.fullmatch(value):
        return (
            f"header '{name}' holds a control character or starts or ends with a space; remove them from "
            "the value"
        )
    return None


def check_headers(headers: dict[str, str]) -> None:
    """Raise for the first header that cannot be sent (see `header_problem`)."""
    for name, value in headers.items():
        why = header_problem(name, value)
        if why is not None:
            raise UserError(why)


def wire_checks(
    config: BaseModel, loc: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Callable[[], Any]]]:
    """A check for every URL and header `config` (and every model inside it) declares, with its field path:
    whatever the bot kind, a field declared `SecretURL` is a URL and one declared `HTTP_HEADERS` headers."""
    for name, info in type(config).model_fields.items():
        value = getattr(config, name)
        if value is None:
            continue
        where = (*loc, name)
        if secret_of(info) is SecretURL and isinstance(value, str):
            what = "bot url" if loc[:1] == ("bot",) else "url"
            yield where, functools.partial(check_url, value, what)
        if HTTP_HEADERS in info.metadata and isinstance(value, dict):
            for key, text in value.items():
                yield (*where, key), functools.partial(check_headers, {key: text})
        if isinstance(value, BaseModel):
            yield from wire_checks(value, where)
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, BaseModel):
                    yield from wire_checks(item, (*where, key))
