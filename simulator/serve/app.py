"""The desk's Starlette application: routes of every page, static files, security middleware, errors."""

from __future__ import annotations

__all__ = ["Desk", "create_app"]

import errno
from dataclasses import dataclass
from importlib import resources

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from simulator.errors import UserError
from simulator.serve import (
    pages_confirm,
    pages_drafts,
    pages_edit,
    pages_label,
    pages_live,
    pages_proposals,
    pages_runs,
    pages_safety,
    pages_talk,
)
from simulator.serve.bodylimit import BodyLimit
from simulator.serve.config import DeskConfig
from simulator.serve.render import page
from simulator.serve.runs_index import RunIndex
from simulator.serve.security import security_middleware
from simulator.serve.talks import TalkDesk


@dataclass
class Desk:
    """What every page reads: the configuration, the runs and the talks in progress."""

    config: DeskConfig
    index: RunIndex
    talks: TalkDesk


async def _user_error(request: Request, exc: Exception) -> Response:
    message = exc.render() if isinstance(exc, UserError) else str(exc)
    if not hasattr(request.state, "csrf"):
        request.state.csrf = ""
    # A value quoted from the request may hold a lone surrogate, which the page's UTF-8 cannot carry.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return page(request, "error.html", 400, title="Error", message=message)


# What a request's name can make the OS answer, when a path it names slipped past `config.inside` (the one
# door): the request's fault, a 400 with one line, never a 500. Any other OSError is the desk's own.
_NAME_ERRORS = {
    errno.ENAMETOOLONG: "a name in this request is too long for the file system; use a shorter one",
    errno.ELOOP: "a path in this request leads through a symbolic link loop; name another",
}


async def _os_error(request: Request, exc: Exception) -> Response:
    if not isinstance(exc, OSError) or exc.errno not in _NAME_ERRORS:
        raise exc
    return await _user_error(request, UserError(_NAME_ERRORS[exc.errno]))


def create_app(config: DeskConfig) -> Starlette:
    """The review desk for `config`'s folders."""
    static = StaticFiles(directory=str(resources.files("simulator.serve").joinpath("static")))
    # The report's style sheet for a turn's parts (options, tool calls): one drawing, report and desk alike.
    report_assets = StaticFiles(directory=str(resources.files("simulator.report").joinpath("assets")))
    app = Starlette(
        routes=[
            *pages_runs.routes(),
            *pages_label.routes(),
            *pages_edit.routes(),
            *pages_talk.routes(),
            *pages_safety.routes(),
            *pages_live.routes(),
            *pages_proposals.routes(),
            *pages_confirm.routes(),
            *pages_drafts.routes(),
            Mount("/static", static, name="static"),
            Mount("/report-assets", report_assets, name="report-assets"),
        ],
        middleware=[
            Middleware(BodyLimit, max_bytes=config.max_body),  # outermost: no layer reads more than the cap
            Middleware(TrustedHostMiddleware, allowed_hosts=config.allowed_hosts),
            Middleware(BaseHTTPMiddleware, dispatch=security_middleware(config.token)),
        ],
        exception_handlers={UserError: _user_error, OSError: _os_error},
    )
    app.state.desk = Desk(config, RunIndex(config.runs_dir), TalkDesk(config.runs_dir))
    return app
