"""Runs list, run page with its conversations, the HTML report, the transcript reader and calibration."""

from __future__ import annotations

__all__ = ["routes"]

from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from simulator.analysis.calibrate import calibrate_labels
from simulator.errors import UserError
from simulator.report.calibration_view import criterion_tables
from simulator.report.draw_html import html_table
from simulator.report.html import render_html
from simulator.report.html_parts import highlighted_quotes
from simulator.report.model import Report
from simulator.serve.reader import ReaderFilter, matching, neighbours
from simulator.serve.render import page


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _options(report: Report) -> dict[str, list[str]]:
    return {
        "criteria": sorted({v.criterion_id for t in report.transcripts for v in t.verdicts}),
        "tags": sorted({tag for t in report.transcripts for tag in t.tags}),
    }


async def runs_list(request: Request) -> Response:
    desk = _desk(request)
    return page(
        request, "runs.html", title="Runs", rows=desk.index.summaries(), root=str(desk.config.runs_dir)
    )


async def run_page(request: Request) -> Response:
    name = request.path_params["run"]
    _, report = _desk(request).index.load(name)
    chosen = ReaderFilter.from_query(dict(request.query_params))
    return page(
        request,
        "run.html",
        title=name,
        name=name,
        report=report,
        items=matching(report, chosen),
        filter=chosen,
        query=chosen.query(),
        options=_options(report),
    )


async def report_page(request: Request) -> Response:
    """The same HTML as `simulator report --html`, from the same report model."""
    _, report = _desk(request).index.load(request.path_params["run"])
    # The report carries its own Content-Security-Policy (an inline script allowed by hash).
    return HTMLResponse(render_html(report), headers={"Content-Security-Policy": "frame-ancestors 'none'"})


async def reader_page(request: Request) -> Response:
    name, conversation = request.path_params["run"], request.path_params["conversation"]
    run, report = _desk(request).index.load(name)
    transcript = next((t for t in report.transcripts if t.id == conversation), None)
    if transcript is None:
        raise UserError(f"no conversation '{conversation}' in run {name}")
    chosen = ReaderFilter.from_query(dict(request.query_params))
    items = matching(report, chosen)
    previous, following, position = neighbours(items, conversation)
    return page(
        request,
        "reader.html",
        title=conversation,
        name=name,
        t=transcript,
        quotes=highlighted_quotes(transcript),
        prev=previous,
        next=following,
        position=position,
        total=len(items),
        filter=chosen,
        query=chosen.query(),
        options=_options(report),
        imported=run.manifest.kind == "imported",
    )


async def calibration_page(request: Request) -> Response:
    """Per criterion: the judge against each labeller, labellers against each other (labels.jsonl)."""
    name = request.path_params["run"]
    run, _ = _desk(request).index.load(name)
    result = calibrate_labels(run, allow_empty=True)
    # The same tables `simulator calibrate RUN` prints, drawn by the report's HTML renderer (escaped there).
    tables = {
        c.criterion_id: Markup("".join(html_table(t) for t in criterion_tables(c))) for c in result.criteria
    }
    return page(
        request,
        "calibration.html",
        title="Calibration",
        name=name,
        panel=result,
        tables=tables,
        path=str(run.path),
    )


def routes() -> list[Route]:
    return [
        Route("/", runs_list),
        Route("/runs/{run}", run_page),
        Route("/runs/{run}/report", report_page),
        Route("/runs/{run}/calibration", calibration_page),
        Route("/runs/{run}/c/{conversation}", reader_page),
    ]
