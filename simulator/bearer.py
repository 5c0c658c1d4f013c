"""The access token a local web service (the review desk, the live trace receiver) may require: offered as a
cookie, a `?token=` link or `Authorization: Bearer`, and compared in constant time."""

from __future__ import annotations

__all__ = ["TOKEN_COOKIE", "token_ok"]

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request

TOKEN_COOKIE = "desk_token"


def token_ok(request: Request, token: str) -> bool:
    """True when the request carries the token (cookie, `?token=` or `Authorization: Bearer`)."""
    offered = [
        request.cookies.get(TOKEN_COOKIE, ""),
        request.query_params.get("token", ""),
        request.headers.get("authorization", "").removeprefix("Bearer "),
    ]
    return any(secrets.compare_digest(o.encode(), token.encode()) for o in offered if o)
