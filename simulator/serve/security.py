"""Access token, cross-site request forgery protection and security headers for every desk response.

- Token: when the desk serves anything but loopback, every request needs the token (a `?token=` link sets
  a cookie once; scripts may send `Authorization: Bearer`).
- CSRF: a random per-browser value in a cookie, repeated in every form (`csrf` field) or in the
  `X-CSRF-Token` header; every state-changing request is refused unless both match and the Origin, when
  sent, is this desk.
- Headers: a Content-Security-Policy that allows only the desk's own files and no other site.
"""

from __future__ import annotations

__all__ = ["security_middleware"]

import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from simulator.bearer import TOKEN_COOKIE, token_ok

CSRF_COOKIE = "desk_csrf"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; "
    "connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class CsrfError(Exception):
    """A state-changing request without this browser's CSRF value."""


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    parts = urlsplit(origin)
    # Scheme, host and port: an https:// page on the same host and port is another origin.
    return parts.scheme == request.url.scheme and parts.netloc == request.headers.get("host", "")


async def check_csrf(request: Request) -> None:
    """Raise CsrfError unless the request carries this browser's CSRF value and comes from the desk."""
    cookie = request.cookies.get(CSRF_COOKIE, "")
    offered = request.headers.get("x-csrf-token", "")
    if not offered and request.headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        # Read the raw body (the middleware keeps it for the route), never the parsed form, which would
        # consume the stream the route reads next.
        values = parse_qs((await request.body()).decode("utf-8", "replace")).get("csrf", [""])
        offered = values[0]
    if not cookie or not offered or not secrets.compare_digest(cookie.encode(), offered.encode()):
        raise CsrfError("the form's CSRF value is missing or stale; reload the page and try again")
    if not _same_origin(request):
        raise CsrfError("the request came from another site")


def security_middleware(
    token: str | None,
) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    """The HTTP middleware: token gate, CSRF cookie, security headers."""

    async def middleware(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if token is not None and not token_ok(request, token):
            return PlainTextResponse(
                "this review desk needs its access token: open the link `simulator serve` printed", 403
            )
        if token is not None and "token" in request.query_params and request.method in SAFE_METHODS:
            # Swap the token in the address for a cookie, so it does not stay in the history or get copied.
            clean = URL(str(request.url)).remove_query_params("token")
            response: Response = RedirectResponse(str(clean), 303)
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
            return response
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        request.state.csrf = csrf
        if request.method not in SAFE_METHODS:
            try:
                await check_csrf(request)
            except CsrfError as exc:
                return PlainTextResponse(f"refused: {exc}", 403)
        response = await call_next(request)
        if request.cookies.get(CSRF_COOKIE) != csrf:
            response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict")
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        # same-origin, not no-referrer: under no-referrer browsers send `Origin: null` on form posts
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return middleware
