"""The access token a local web service (the review desk, the live trace receiver) may require: offered as a
cookie, a `?token=` link or `Authorization: Bearer`, and compared in constant time."""

from __future__ import annotations

__all__ = ["TOKEN_COOKIE", "token_in", "token_ok"]

import secrets
from collections.abc import Iterable
from http.cookies import _unquote  # the unquoting Starlette's cookie parser uses
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

if TYPE_CHECKING:
    from starlette.requests import Request

TOKEN_COOKIE = "desk_token"


def token_ok(request: Request, token: str) -> bool:
    """True when the request carries the token (cookie, `?token=` or `Authorization: Bearer`)."""
    return _offered_ok(
        [
            request.cookies.get(TOKEN_COOKIE, ""),
            request.query_params.get("token", ""),
            request.headers.get("authorization", "").removeprefix("Bearer "),
        ],
        token,
    )


def token_in(cookie: str, query: str, authorization: str, token: str) -> bool:
    """`token_ok` for a server without Starlette's request object (the collector's receiver): the raw
    `Cookie` and `Authorization` headers and query string, read the same way."""
    return _offered_ok(
        [
            _cookie(cookie, TOKEN_COOKIE),
            next((v for k, v in reversed(parse_qsl(query, keep_blank_values=True)) if k == "token"), ""),
            authorization.removeprefix("Bearer "),
        ],
        token,
    )


def _cookie(header: str, name: str) -> str:
    """One cookie's value from a `Cookie` header, parsed as Starlette's `cookie_parser` does (the last wins)."""
    found = ""
    for chunk in header.split(";") if header else ():
        key, _, value = chunk.partition("=") if "=" in chunk else ("", "", chunk)
        if key.strip() == name:
            found = _unquote(value.strip())
    return found


def _offered_ok(offered: Iterable[str], token: str) -> bool:
    return any(secrets.compare_digest(o.encode(), token.encode()) for o in offered if o)
