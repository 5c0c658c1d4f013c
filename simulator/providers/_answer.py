"""What an HTTP answer that is not a usable answer says, in words, the same on the wire path and the SDK's.

A provider call ends in one of: an answer (2xx, a JSON object of the API's shape), an error (4xx, 5xx: the
SDK's error classes, classified in `_http`), or something that is neither, which this module names:

- a status that is neither an answer nor an error (a redirect, 304, a status below 200): permanent, since
  the same URL answers the same way; a redirect is not followed (the request carries the API key), its
  target is said so that base_url can be set to it;
- a 2xx in a content encoding the request did not ask for (brotli, zstd): permanent for the same reason
  (an error status in one is classified by its status, as any error is: its body is no text, `readable_body`);
- a 2xx whose body is not JSON (a web page, nothing, text cut short), or JSON that is not the API's shape
  (`malformed`; a token count that is not one among them, `usage_counts`): transient, as on the SDK's path,
  since a server that cut one answer short may send the next one whole; after the retries, the message says
  what came and what to check.

Each names the URL, the status, the content type and size, and the start of the body, visible on one line.
"""

from __future__ import annotations

__all__ = [
    "BadCount",
    "excerpt",
    "header",
    "malformed",
    "readable_body",
    "status_words",
    "unanswered",
    "unasked_encoding",
    "unreadable",
    "usage_counts",
]

import json
import re
from collections.abc import Sequence
from http import HTTPStatus
from urllib.parse import urljoin

import orjson

from simulator.jsonbounds import json_kind
from simulator.plural import noun
from simulator.providers.base import ProviderError
from simulator.visible import visible

# The content encodings the request accepts and both paths decode ("" and identity: none).
_READ_ENCODINGS = frozenset({"", "identity", "gzip", "x-gzip", "deflate"})
_EXCERPT = 200
# The most tokens one call can count: more than any model's context holds. A count above it, below 0 or not a
# whole number is the server's fault, never a figure a run's cost or token budget adds up.
_MAX_CALL_TOKENS = 100_000_000
_HTML = re.compile(r"<\s*(?:!doctype|html|head|body|title|h[1-6]|p|div|pre|center)\b", re.IGNORECASE)
_TAG = re.compile(r"<(?:script|style)\b.*?</(?:script|style)\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)
_SPACE = re.compile(r"\s+")
_FIX = "check that base_url points at a server that speaks this API"


def header(raw: Sequence[tuple[bytes, bytes]], name: bytes) -> str:
    """The first value of header `name` (lower case) among raw (name, value) pairs, or ''."""
    for key, value in raw:
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return ""


def readable_body(raw: Sequence[tuple[bytes, bytes]], body: bytes) -> bytes:
    """An error answer's body as text can be read from it: none when it is in an encoding neither path
    decodes (its bytes are no text), whatever its status says."""
    return body if header(raw, b"content-encoding").lower() in _READ_ENCODINGS else b""


def status_words(status: int) -> str:
    """`502 Bad Gateway`: the status and its standard phrase when it has one."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def excerpt(body: bytes | str, limit: int = _EXCERPT) -> str:
    """The start of a body as one visible line: a web page's text without its tags, whitespace collapsed."""
    text = body[: limit * 20].decode("utf-8", "replace") if isinstance(body, bytes) else body[: limit * 20]
    if _HTML.search(text):
        text = _TAG.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    cut = len(text) > limit
    return visible(text[:limit], keep_newlines=False) + ("..." if cut else "")


def unanswered(url: str, path: str, status: int, raw: Sequence[tuple[bytes, bytes]]) -> ProviderError:
    """A status that is neither an answer nor an error; for a redirect, where it points and the base_url
    that would reach it (`path` is the API's own part of `url`, such as /chat/completions)."""
    location = header(raw, b"location")
    said = f"{url} answered {status_words(status)}"
    if 300 <= status < 400 and location:
        target = visible(urljoin(url, location)[:_EXCERPT], keep_newlines=False)
        base = target.removesuffix(path) if target.endswith(path) and path else None
        fix = f"set base_url to {base}" if base else "set base_url to the address it points at"
        return ProviderError(
            "permanent",
            f"{said}, a redirect to {target}; {fix} (a redirect is not followed: the request carries the API key)",
            status=status,
        )
    return ProviderError(
        "permanent", f"{said}, which is neither an answer nor an error; {_FIX}", status=status
    )


def _what(url: str, status: int, raw: Sequence[tuple[bytes, bytes]], body: bytes) -> str:
    kind = header(raw, b"content-type").split(";")[0].strip() or "no content type"
    size = f"{len(body):,} {noun(len(body), 'byte')}"
    return (
        f"the answer from {url} ({status_words(status)}, {visible(kind[:80], keep_newlines=False)}, {size})"
    )


def unasked_encoding(url: str, encoding: str) -> ProviderError | None:
    """An answer in a content `encoding` the request did not ask for (brotli, zstd, a stack of two), whose
    bytes neither path reads; None for one it reads."""
    encoding = encoding.strip().lower()
    if encoding in _READ_ENCODINGS:
        return None
    return ProviderError(
        "permanent",
        f"the answer from {url} is in the {visible(encoding[:40], keep_newlines=False)} content encoding, "
        "which the request did not ask for (it accepts gzip and deflate) and which cannot be read; "
        f"a proxy between may re-encode answers; {_FIX}",
    )


def unreadable(
    url: str, status: int, raw: Sequence[tuple[bytes, bytes]], body: bytes, problem: str
) -> ProviderError:
    """A 2xx whose body cannot be read as JSON; `problem` says why (a JSONRefused's words, which name
    `the answer`). An encoding the request did not ask for is said as such: the bytes were never text."""
    refused = unasked_encoding(url, header(raw, b"content-encoding"))
    if refused is not None:
        return refused
    what = _what(url, status, raw, body)
    if not body.strip():
        return ProviderError("transient", f"{what} is empty; {_FIX}")
    problem = problem.removeprefix("the answer ")
    return ProviderError("transient", f"{what} {problem}; it begins: {excerpt(body)!r}; {_FIX}")


class BadCount(ValueError):
    """A token count in an answer's usage that is not one; its words name the field and what it held."""


def usage_counts(usage: object, fields: tuple[str, ...], where: str = "usage") -> list[int]:
    """The token counts at `fields` (dotted: `prompt_tokens_details.cached_tokens`) of an answer's `usage`
    object (`where` names it): 0 for one missing or null (a server that counts nothing), else a whole number
    from 0 to _MAX_CALL_TOKENS (12.0 is 12); anything else raises BadCount naming the field."""
    counts = []
    for field in fields:
        value, path = usage, where
        for part in field.split("."):
            if value is None:
                break
            if not isinstance(value, dict):
                raise BadCount(f"{path} is {json_kind(value)}, not an object")
            value, path = value.get(part), f"{path}.{part}"
        counts.append(_count(value, path))
    return counts


def _count(value: object, path: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int | float) and not isinstance(value, bool):
        if 0 <= value <= _MAX_CALL_TOKENS and value == int(value):  # NaN and infinity fail the first
            return int(value)
        said = f"{value!r}"[:40]
    else:
        said = f"{json_kind(value)} ({excerpt(json.dumps(value, default=str), 40)})"
    raise BadCount(
        f"{path} is {said}, which is not a token count (a whole number from 0 to {_MAX_CALL_TOKENS:,})"
    )


def malformed(url: str, api: str, answer: object, why: str | None = None) -> ProviderError:
    """A JSON answer that is not of the API's shape (`api`: 'a Chat Completions answer'): `why` when it is
    known (a BadCount's words), else the answer shown as JSON."""
    if why is not None:
        return ProviderError("transient", f"the answer from {url} is JSON but not {api}: {why}; {_FIX}")
    try:
        text = orjson.dumps(answer).decode()
    except TypeError:  # text orjson will not write (a lone surrogate): the standard library will
        text = json.dumps(answer, default=str)
    return ProviderError("transient", f"the answer from {url} is JSON but not {api}: {excerpt(text)}; {_FIX}")
