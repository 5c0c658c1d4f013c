"""Jinja2 templates with autoescaping on, and the filters pages share (control characters made visible)."""

from __future__ import annotations

__all__ = ["page", "templates", "visible"]

import json
from typing import Any

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from simulator.record.transcript import Turn
from simulator.report.html_parts import highlight
from simulator.report.html_turns import turn_html
from simulator.serve.names import part, parts
from simulator.visible import visible as shown_escaped


def visible(text: object) -> str:
    """Control and text-reordering characters shown as their escapes (`\\x1b`, `\\u202e`), the one rule
    of the HTML report, the terminal and a problem's message (`simulator.visible`): a browser obeys a bidi
    override, and a reviewer must read the words in the order the bot sent them, with the same marks the
    report shows for the same transcript."""
    return shown_escaped(str(text))


def _marked(text: str, quotes: list[tuple[str, str, str]]) -> Markup:
    """Escaped text with each quoted passage in <mark> (the HTML report's highlighter: it escapes)."""
    return Markup(highlight(visible(text), [(visible(q), c, r) for q, c, r in quotes]))


def _bubbles(
    turn: Turn,
    quotes: list[tuple[str, str, str]] | None = None,
    you: bool = False,
    audio_root: str | None = None,
) -> Markup:
    """A turn's parts as message bubbles (report/html_turns.py: buttons as buttons, tool calls as cards),
    its text made visible and escaped, with the quoted passages marked."""
    marks = [(visible(q), c, r) for q, c, r in quotes or []]
    bubbles = turn_html(
        turn.role, turn.parts, lambda text: highlight(visible(text), marks), audio_root=audio_root
    )
    html_text = "".join(bubbles)
    if you:
        html_text = html_text.replace('<span class="who">USER</span>', '<span class="who">YOU</span>')
    return Markup(html_text)


def _as_json(value: Any) -> str:
    return visible(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _finalize(value: Any) -> Any:
    """Every `{{ value }}` of every template: control characters made visible (Markup is already safe)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


_environment = jinja2.Environment(
    loader=jinja2.PackageLoader("simulator.serve", "templates"),
    autoescape=True,  # every value is escaped unless a filter returns Markup from escaped parts
    undefined=jinja2.StrictUndefined,
    finalize=_finalize,
    trim_blocks=True,
    lstrip_blocks=True,
)
_environment.filters["visible"] = visible
_environment.filters["marked"] = _marked
_environment.filters["as_json"] = _as_json
_environment.filters["bubbles"] = _bubbles
_environment.filters["part"] = part  # a name in a link's path: `/` too encoded (serve/names.py)
_environment.filters["parts"] = parts  # a file's path in a link: each part encoded
templates = Jinja2Templates(env=_environment)


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render `template` with the request's CSRF value and the desk's navigation."""
    context.setdefault("title", "")
    return templates.TemplateResponse(
        request, template, {"csrf": request.state.csrf, **context}, status_code=status
    )
