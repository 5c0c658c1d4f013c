"""The safety-case pages: the document for a run, the sign-off form and who signed what; the history page."""

from __future__ import annotations

__all__ = ["routes"]

import re
from collections.abc import Callable
from typing import Any

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from simulator.errors import UserError
from simulator.readers import read_or_refuse
from simulator.report.draw_html import html_section
from simulator.report.section import Row, Section, table_section, text
from simulator.safety.archive import FOLDER, MAX_CASE_BYTES
from simulator.safety.case import SafetyCase, build_safety_case
from simulator.safety.hazards import load_hazard_log
from simulator.safety.html import matrix_html, safety_case_html
from simulator.safety.signing import sign_case
from simulator.safety.signoffs import DECISIONS, SignOffBook, not_shown_controlled, signoff_views
from simulator.safety.view import safety_case_sections
from simulator.serve.bodylimit import read_form
from simulator.serve.names import Route, part
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
    return lambda cid: f"/runs/{part(run)}/c/{part(cid)}"


def failing_links(case: SafetyCase, run: str) -> Section:
    """Every failing conversation a control cites, each a link to its transcript in the desk's reader."""
    rows = [
        Row(
            [
                text(
                    e.conversation_id,
                    link=_transcript_link(run)(e.conversation_id),
                ),
                text(h.id),
                text(c.id),
                text(", ".join(e.failed)),
            ],
            "fail",
            [e.reasoning] if e.reasoning else [],
        )
        for h in case.hazards
        for c in h.controls
        for e in c.failing
    ]
    notes = [] if rows else ["No control cites a failing conversation."]
    columns = ["conversation", "hazard", "control", "failed"]
    return table_section(
        id="failing", title="Failing conversations, linked", notes=notes, columns=columns, rows=rows
    )


async def safety_page(request: Request) -> Response:
    name = request.path_params["run"]
    case = await run_in_threadpool(_case, request, name)
    views = signoff_views(_book(request), case.traceability.hazard_log, case.evidence_hash)
    drawn = []
    # The printable document's sections and matrix (drawn by the report's HTML renderer, escaped there); the
    # sign-off is this page's own form below.
    for section in safety_case_sections(case, views, _transcript_link(name)):
        if section.id == "hazards":
            drawn.append(Markup(matrix_html(case)))
        if section.id == "calibration":  # after the controls: their failing conversations, linked
            drawn.append(Markup(html_section(failing_links(case, name))))
        if section.id != "signoff":
            drawn.append(Markup(html_section(section)))
    return page(
        request,
        "safety.html",
        title=f"Safety case · {name}",
        name=name,
        case=case,
        sections=drawn,
        signoffs=views,
        decisions=DECISIONS,
        open_hazards=not_shown_controlled(case),
    )


async def document_page(request: Request) -> Response:
    """The same printable document as `simulator safety-case --html`, with the sign-offs that exist."""
    case = await run_in_threadpool(_case, request, request.path_params["run"])
    views = signoff_views(_book(request), case.traceability.hazard_log, case.evidence_hash)
    return HTMLResponse(safety_case_html(case, views), headers={"Content-Security-Policy": DOCUMENT_CSP})


async def signed_document(request: Request) -> Response:
    """A signed document as archived when it was signed: readable after its run is re-judged or deleted."""
    digest = request.path_params["digest"]
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise UserError("a signed document is named by its sha256 (64 hex digits)")
    path = _desk(request).config.data_folder / FOLDER / f"{digest}.html"
    if not path.is_file():
        raise UserError(f"no signed document {digest[:12]}… in this desk")
    text = read_or_refuse(path, MAX_CASE_BYTES)  # a regular file, bounded: never a FIFO planted in the desk
    return HTMLResponse(text, headers={"Content-Security-Policy": DOCUMENT_CSP})


def _field(fields: dict[str, str], key: str, limit: int) -> str:
    value = fields.get(key, "").strip()
    if len(value) > limit:
        raise UserError(f"{key} is longer than {limit} characters; shorten it")
    return value


async def sign(request: Request) -> Response:
    """Record one sign-off of the evidence the reviewer read (refused if it changed meanwhile)."""
    name = request.path_params["run"]
    form = await read_form(request)
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    who, role = _field(fields, "name", 200), _field(fields, "role", 200)
    decision, comment = fields.get("decision", ""), _field(fields, "comment", 5000)
    justification = _field(fields, "justification", 5000)
    if not who or not role:
        raise UserError("give your name and your role (e.g. Clinical Safety Officer) before signing")
    if decision not in DECISIONS:
        raise UserError(f"choose a decision: {', '.join(DECISIONS)}")
    case = await run_in_threadpool(_case, request, name)
    if fields.get("evidence_hash", "") != case.evidence_hash:
        raise UserError(
            "the evidence changed while you were reading it (a new verdict, label or hazard log edit); "
            "reload the safety case and read it again before signing"
        )
    folder = _desk(request).config.data_folder
    await run_in_threadpool(sign_case, folder, case, who, role, decision, comment, justification)
    return RedirectResponse(f"/safety/{part(name)}#signoffs", 303)


async def history_page(request: Request) -> Response:
    """Key rates and hazard bounds across the desk's runs of one suite, in time order."""
    from simulator.safety.history import build_history_loaded, mark_signed
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
    mark_signed(history, [(s.runs, f"{s.name}: {s.decision}") for s in _book(request).all()])
    return HTMLResponse(history_html(history), headers={"Content-Security-Policy": DOCUMENT_CSP})


def routes() -> list[Route]:
    return [
        Route("/safety/{run}", safety_page),
        Route("/safety/{run}/document", document_page),
        Route("/safety/{run}/sign", sign, methods=["POST"]),
        Route("/signed/{digest}", signed_document),
        Route("/history", history_page),
    ]
