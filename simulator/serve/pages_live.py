"""The live page: trends of the conversations `simulator collect` wrote into the desk's runs folder, per
criterion and per quality signal, with the review queue's size and the alerts that fired."""

from __future__ import annotations

__all__ = ["routes"]

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from simulator.collect.folders import collected_folders
from simulator.collect.trends import load_observations, metric_names, trend_rows
from simulator.errors import UserError
from simulator.jsonbounds import loads_bounded
from simulator.readers import missing, text_lines
from simulator.serve.names import Route
from simulator.serve.render import page
from simulator.serve.trend_chart import trend_svg


def _fired(root: Any) -> list[dict[str, Any]]:
    path = root / ".collect" / "alerts.jsonl"
    if missing(path):
        return []
    out = []
    for _, line in list(text_lines(path))[-20:]:
        try:
            out.append(loads_bounded(line, "the line"))
        except ValueError:
            continue
    return out


def _review_counts(folders: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for folder in folders:
        path = folder / "review.jsonl"
        if not missing(path):
            counts[folder.name] = sum(1 for _ in text_lines(path))
    return counts


def _charts(root: Any, period: str) -> dict[str, Any]:
    folders = collected_folders(root)
    observations = load_observations(folders)
    metrics = metric_names(observations)
    try:
        rows = trend_rows(observations, metrics, period)
    except ValueError as exc:
        raise UserError(f"period: {exc}") from None
    charts = []
    for metric in metrics:
        mine = [r for r in rows if r.rate.metric == metric]
        if any(r.rate.n for r in mine):
            charts.append({"metric": metric, "svg": trend_svg(mine), "rows": mine})
    return {
        "charts": charts,
        "conversations": len(observations),
        "folders": [f.name for f in folders],
        "review": _review_counts(folders),
        "alerts": _fired(root),
    }


async def live_page(request: Request) -> Response:
    root = request.app.state.desk.config.runs_dir
    period = request.query_params.get("period", "day")
    data = await run_in_threadpool(_charts, root, period)
    return page(request, "live.html", title="Live", period=period, **data)


def routes() -> list[Route]:
    return [Route("/live", live_page)]
