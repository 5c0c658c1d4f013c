"""The coverage map and the review queue of drafted vignettes: read each draft, edit it, accept or reject it with a name and a
reason. Only an accepted draft joins the suite (authoring/review.py writes it, validated with the suite's
own checks and the near-duplicate check); a refused acceptance shows its problems and writes nothing.
State-changing requests pass the desk's CSRF and Origin checks (serve/security.py) like every other form."""

from __future__ import annotations

__all__ = ["routes"]

from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from simulator.api import load_suite
from simulator.authoring.coverage import load_coverage
from simulator.authoring.coverage_view import coverage_sections
from simulator.authoring.review import accept_draft, decisions, pending_drafts, reject_draft
from simulator.config.yamlfile import MAX_FILE_BYTES
from simulator.errors import UserError
from simulator.readers import read_or_refuse
from simulator.report.draw_html import html_sections
from simulator.serve.bodylimit import read_form
from simulator.serve.config import child_folder
from simulator.serve.names import Route
from simulator.serve.render import page


def _queue(request: Request) -> tuple[Path, Path]:
    config = request.app.state.desk.config
    if config.drafts_dir is None or config.drafts_suite is None:
        raise UserError("no review queue: start the desk with --drafts QUEUE --suite SUITE")
    return Path(config.drafts_dir), Path(config.drafts_suite)


async def list_page(request: Request) -> Response:
    queue, suite = _queue(request)
    waiting = [p.stem for p in pending_drafts(queue)]
    done = list(reversed(decisions(queue)))
    return page(
        request, "drafts.html", title="Drafts", queue=str(queue), suite=str(suite), waiting=waiting, done=done
    )


def _draft(queue: Path, draft_id: str) -> Path:
    path = child_folder(queue, f"{draft_id}.yaml") if queue.is_dir() else queue / "missing"
    if not path.is_file():
        raise UserError(f"no draft '{draft_id}' waiting in {queue}")
    return path


def _show(request: Request, draft_id: str, text: str, problems: list[str], status: int = 200) -> Response:
    return page(
        request, "draft.html", status, title=draft_id, draft_id=draft_id, text=text, problems=problems
    )


async def draft_page(request: Request) -> Response:
    queue, _ = _queue(request)
    draft_id = request.path_params["draft"]
    return _show(request, draft_id, read_or_refuse(_draft(queue, draft_id), MAX_FILE_BYTES), [])


async def decide(request: Request) -> Response:
    queue, suite_file = _queue(request)
    draft_id = request.path_params["draft"]
    path = _draft(queue, draft_id)
    form = await read_form(request)
    fields: dict[str, Any] = {k: v for k, v in form.items() if isinstance(v, str)}
    decision = fields.get("decision", "")
    reviewer, reason = fields.get("reviewer", ""), fields.get("reason", "")
    text = fields.get("yaml", "").replace("\r\n", "\n") or read_or_refuse(path, MAX_FILE_BYTES)
    try:
        if decision == "accepted":
            suite = load_suite(suite_file)
            into = suite.resolve(suite.scenarios.paths[0])
            await run_in_threadpool(accept_draft, queue, draft_id, into, reviewer, reason, suite, text)
        elif decision == "rejected":
            await run_in_threadpool(reject_draft, queue, draft_id, reviewer, reason)
        else:
            raise UserError("choose accept or reject")
    except UserError as exc:
        problems = [str(p) for p in exc.problems] or [str(exc)]
        return _show(request, draft_id, text, problems, 400)
    return RedirectResponse("/drafts", 303)


async def coverage_page(request: Request) -> Response:
    """The coverage map of the suite drafts join, against the desk's hazard log (`?run=NAME`: with the
    safety case's figures on that run)."""
    config = request.app.state.desk.config
    _, suite = _queue(request)
    if config.hazards is None:
        raise UserError("no hazard log: start the desk with --hazards HAZARDS to see the coverage map")
    name = request.query_params.get("run")
    runs = [child_folder(Path(config.runs_dir), name)] if name else []
    queue = Path(config.drafts_dir)
    coverage = await run_in_threadpool(load_coverage, suite, Path(config.hazards), runs, 3, queue)
    sections = html_sections(coverage_sections(coverage))  # the report's one HTML renderer, escaped there
    return page(request, "coverage.html", title="Coverage", c=coverage, run=name, sections=sections)


def routes() -> list[Route]:
    return [
        Route("/coverage", coverage_page),
        Route("/drafts", list_page),
        Route("/drafts/{draft}", draft_page),
        Route("/drafts/{draft}", decide, methods=["POST"]),
    ]
