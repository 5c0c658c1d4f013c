"""The safety-case pages: the document for a run, the sign-off form and who signed what; the history page."""

from __future__ import annotations

__all__ = ["routes"]

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from simulator.errors import UserError
from simulator.report.draw_html import html_section
from simulator.safety.case import SafetyCase, build_safety_case
from simulator.safety.hazards import load_hazard_log
from simulator.safety.html import safety_case_html
from simulator.safety.signoffs import DECISIONS, SignOff, SignOffBook, signoff_views
from simulator.safety.view import safety_case_sections
from simulator.serve.render import page

# The standalone documents carry their own styles inline and no script: allow exactly that.
DOCUMENT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'"
)


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _case(request: Request, name: str) -> SafetyCase:
    desk = _desk(request)
    if desk.config.hazards is None:
        raise UserError("this desk has no hazard log: start it with `simulator serve --hazards hazards.yaml`")
    run, _ = desk.index.load(name)
    return build_safety_case([run], load_hazard_log(desk.config.hazards))


def _book(request: Request) -> SignOffBook:
    return SignOffBook(_desk(request).config.data_folder)


def _transcript_link(run: str) -> Callable[[str], str]:
    """Where the desk shows a conversation of `run` (the reader page), for the failing evidence links."""
    return lambda cid: f"/runs/{quote(run)}/c/{quote(cid, safe='')}"


async def safety_page(request: Request) -> Response:
    name = request.path_params["run"]
    case = await run_in_threadpool(_case, request, name)
    views = signoff_views(_book(request), case.traceability.hazard_log, case.evidence_hash)
    return page(
        request,
        "safety.html",
        title=f"Safety case · {name}",
        name=name,
        case=case,
        # Drawn by the report's HTML renderer (escaped there), as in the printable document.
        sections=[Markup(html_section(s)) for s in safety_case_sections(case, _transcript_link(name))[:-1]],
        signoffs=views,
        decisions=DECISIONS,
    )


async def document_page(request: Request) -> Response:
    """The same printable document as `simulator safety-case --html`."""
    case = await run_in_threadpool(_case, request, request.path_params["run"])
    return HTMLResponse(safety_case_html(case), headers={"Content-Security-Policy": DOCUMENT_CSP})


def _field(fields: dict[str, str], key: str, limit: int) -> str:
    value = fields.get(key, "").strip()
    if len(value) > limit:
        raise UserError(f"{key} is longer than {limit} characters; shorten it")
    return value


async def sign(request: Request) -> Response:
    """Record one sign-off of the evidence the reviewer read (refused if it changed meanwhile)."""
    name = request.path_params["run"]
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    who, role = _field(fields, "name", 200), _field(fields, "role", 200)
    decision, comment = fields.get("decision", ""), _field(fields, "comment", 5000)
    if not who or not role:
        raise UserError("give your name and your role (e.g. Clinical Safety Officer) before signing")
    if decision not in DECISIONS:
        raise UserError(f"choose a decision: {', '.join(DECISIONS)}")
    if decision == "approve with conditions" and not comment:
        raise UserError("approve with conditions: write the conditions in the comment")
    case = await run_in_threadpool(_case, request, name)
    if fields.get("evidence_hash", "") != case.evidence_hash:
        raise UserError(
            "the evidence changed while you were reading it (a new verdict, label or hazard log edit); "
            "reload the safety case and read it again before signing"
        )
    signoff = SignOff(
        signed_at=datetime.now(UTC),
        name=who,
        role=role,
        decision=decision,  # type: ignore[arg-type]
        comment=comment,
        runs=[r.run_id for r in case.traceability.runs],
        evidence_hash=case.evidence_hash,
        hazard_log=case.traceability.hazard_log,
        hazard_log_sha256=case.traceability.hazard_log_sha256,
    )
    await run_in_threadpool(_book(request).append, signoff)
    return RedirectResponse(f"/safety/{name}#signoffs", 303)


async def history_page(request: Request) -> Response:
    """Key rates and hazard bounds across the desk's runs of one suite, in time order."""
    from simulator.safety.history import build_history_loaded
    from simulator.safety.history_view import history_html

    desk = _desk(request)
    suite = request.query_params.get("suite", "")
    loaded = []
    for run_name in desk.index.names():
        try:
            run, _ = desk.index.load(run_name)
        except UserError:
            continue
        if run.manifest.suite is not None and run.manifest.kind == "simulation":
            loaded.append(run)
    suites = sorted({r.manifest.suite.name for r in loaded if r.manifest.suite is not None})
    if not suite:
        return page(request, "history.html", title="History", suites=suites)
    chosen = [r for r in loaded if r.manifest.suite is not None and r.manifest.suite.name == suite]
    if not chosen:
        raise UserError(f"no run of suite '{suite}' in this desk; suites: {', '.join(suites) or 'none'}")
    log = load_hazard_log(desk.config.hazards) if desk.config.hazards is not None else None
    history = await run_in_threadpool(build_history_loaded, chosen, log)
    return HTMLResponse(history_html(history), headers={"Content-Security-Policy": DOCUMENT_CSP})


def routes() -> list[Route]:
    return [
        Route("/safety/{run}", safety_page),
        Route("/safety/{run}/document", document_page),
        Route("/safety/{run}/sign", sign, methods=["POST"]),
        Route("/history", history_page),
    ]
