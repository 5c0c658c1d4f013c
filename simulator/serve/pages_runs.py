"""Runs list, run page with its conversations, the HTML report, the transcript reader and calibration."""

from __future__ import annotations

__all__ = ["routes"]

from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response

from simulator.analysis.calibrate import calibrate_labels
from simulator.analysis.rundata import short_hash
from simulator.errors import UserError
from simulator.report.calibration_view import criterion_tables
from simulator.report.draw_html import html_table
from simulator.report.html import render_html
from simulator.report.html_parts import highlighted_quotes
from simulator.report.model import PICK_JUDGE_SET, Report
from simulator.report.verdict_order import group_verdicts
from simulator.serve.config import inside
from simulator.serve.names import Route, part
from simulator.serve.reader import ReaderFilter, matching, neighbours
from simulator.serve.render import page, templates
from simulator.stats.rates import CITE
from simulator.voice.audio_files import AUDIO_DIR


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
        request,
        "runs.html",
        title="Runs",
        rows=desk.index.summaries(),
        root=str(desk.config.runs_dir),
        cite=CITE,
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
    """The same HTML as `simulator report --html`, from the same report model, under the desk's header (the
    way back to the run and the desk); `?judge_set=HASH` shows another judge set, as `--judge-set` does."""
    name = request.path_params["run"]
    chosen = request.query_params.get("judge_set") or None
    try:
        run, report = _desk(request).index.load(name, chosen)
    except UserError:
        if chosen is None:
            raise
        raise UserError(
            f"judge set '{chosen}' is not one of run {name}: open its report to list them"
        ) from None
    sets = [
        {"short": short_hash(s.hash), "hash": s.hash, "chosen": s.chosen, "judge_models": s.judge_models,
         "verdicts": s.verdicts}
        for s in run.judge_sets
    ]  # fmt: skip
    # The report's advice names a command-line flag; here the header's links choose the judge set.
    findings = [
        f.model_copy(update={"detail": "pick another in the header above"})
        if f.detail == PICK_JUDGE_SET
        else f
        for f in report.findings
    ]
    header = templates.get_template("report_header.html").render(name=name, sets=sets)
    html = render_html(report.model_copy(update={"findings": findings}), header=header)
    # The report carries its own Content-Security-Policy (an inline script allowed by hash).
    return HTMLResponse(html, headers={"Content-Security-Policy": "frame-ancestors 'none'"})


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
        groups=group_verdicts(transcript.verdicts),
        prev=previous,
        next=following,
        position=position,
        total=len(items),
        filter=chosen,
        query=chosen.query(),
        options=_options(report),
        imported=run.manifest.kind == "imported",
        audio_root=f"/runs/{part(name)}/",  # a voice call's audio (audio_file below)
    )


async def audio_file(request: Request) -> Response:
    """A voice call's audio kept in the run folder (`audio/...wav`): only regular WAV files under the run's
    `audio/` folder are served (docs/voice.md)."""
    name = request.path_params["run"]
    wanted = inside(_desk(request).index.path(name) / AUDIO_DIR, request.path_params["path"])
    if wanted.suffix != ".wav" or not wanted.is_file():
        raise UserError(f"no audio '{request.path_params['path']}' in run {name}")
    return FileResponse(wanted, media_type="audio/wav")


async def calibration_page(request: Request) -> Response:
    """Per criterion: the judge against each labeller, labellers against each other (labels.jsonl)."""
    name = request.path_params["run"]
    run, _ = _desk(request).index.load(name)
    # Never the server's paths: the page names the run and its labels file, as the desk knows them.
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
    )


def routes() -> list[Route]:
    return [
        Route("/", runs_list),
        Route("/runs/{run}", run_page),
        Route("/runs/{run}/report", report_page),
        Route("/runs/{run}/calibration", calibration_page),
        Route("/runs/{run}/c/{conversation}", reader_page),
        Route("/runs/{run}/audio/{path:path}", audio_file),
    ]
