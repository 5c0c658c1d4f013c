"""Names in the desk's addresses: every path part a link is built from is percent-encoded, `/` included, and
every route decodes it, so any recorded name opens (a conversation `x/../y#0`, `50% off#1`, `café?#0`).

A server decodes the address before routing (`%2F` would become a separator), so `Route` matches the address
as sent (`raw_path`), with an encoded `/` or `%` inside a part kept encoded, and decodes each part it takes.
"""

from __future__ import annotations

__all__ = ["Route", "part", "parts"]

from typing import Any
from urllib.parse import quote, unquote, unquote_to_bytes

from starlette import routing
from starlette.types import Scope


def part(name: object) -> str:
    """`name` as one path part of a link: every character but letters, digits and `_.-~` percent-encoded."""
    return quote(str(name), safe="")


def parts(path: str) -> str:
    """A relative file path (`scenarios/a b.yaml`) for a link: each part encoded by `part`, `/` between."""
    return "/".join(part(p) for p in path.split("/"))


def _kept(text: str) -> str:
    return text.replace("%", "%25").replace("/", "%2F")


def _route_path(scope: Scope) -> str:
    """The address as sent, each part decoded but for an encoded `%` or `/` (what `Route` matches on)."""
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes):  # a server that keeps no raw path: its decoded one, `%` kept
        return "/".join(_kept(p) for p in str(scope["path"]).split("/"))
    return "/".join(_kept(unquote_to_bytes(p).decode("utf-8", "replace")) for p in raw.split(b"/"))


class Route(routing.Route):
    """A starlette route whose path parameters are whole names: matched on the address as sent, decoded
    after, so an encoded `/` stays inside its part."""

    def matches(self, scope: Scope) -> tuple[routing.Match, Scope]:
        if scope["type"] != "http":
            return super().matches(scope)
        match, child = super().matches({**scope, "path": _route_path(scope)})
        params: dict[str, Any] = child.get("path_params", {})
        for key in self.param_convertors:
            if isinstance(params.get(key), str):
                params[key] = unquote(params[key])
        return match, child
