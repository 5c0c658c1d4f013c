"""Blind labelling: pick a run, criteria and a sample; label each item before the judge's verdict shows.

Labels are appended to the run folder's labels.jsonl through RunFolder.append_labels (one write per label,
so two browsers labelling at once never lose or mix lines); the run's own records are never touched.
"""

from __future__ import annotations

__all__ = ["routes"]

from datetime import UTC, datetime
from typing import Any, get_args
from urllib.parse import parse_qsl, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from simulator.analysis.rundata import RunData
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.record.models import Label, LabelValue
from simulator.serve.bodylimit import read_form
from simulator.serve.names import Route
from simulator.serve.queue import QueueSpec, build_queue, remaining
from simulator.serve.render import page


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _spec(query: list[tuple[str, str]]) -> QueueSpec:
    single = dict(query)
    return QueueSpec.from_query(single, [value for key, value in query if key == "criterion"])


def _load(request: Request, spec: QueueSpec) -> RunData:
    run, _ = _desk(request).index.load(spec.run)
    return run


async def start_page(request: Request) -> Response:
    desk = _desk(request)
    runs = desk.index.names()
    run = request.query_params.get("run", "")
    criteria: list[str] = []
    if run:
        data, _ = desk.index.load(run)
        criteria = sorted({v.criterion_id for v in data.verdicts if v.result in get_args(LabelValue)})
    return page(
        request,
        "label_start.html",
        title="Label",
        runs=runs,
        run=run,
        criteria=criteria,
        labeller=request.query_params.get("labeller", ""),
    )


async def next_item(request: Request) -> Response:
    """Send the labeller to the first item of the queue they have not labelled yet."""
    spec = _spec(list(request.query_params.multi_items()))
    run = _load(request, spec)
    queue = build_queue(run, spec)
    left = remaining(queue, spec.labeller, RunFolder.open(run.path).labels())
    if not left:
        return page(request, "label_done.html", title="Queue done", spec=spec, total=len(queue))
    conversation, criterion = left[0]
    target = (
        f"/label/item?{spec.query()}&{urlencode({'conversation': conversation, 'criterion_id': criterion})}"
    )
    return RedirectResponse(target, 303)


async def item_page(request: Request) -> Response:
    """One item, blind: the transcript and the criterion's wording, no verdict, no final state."""
    spec = _spec(list(request.query_params.multi_items()))
    run = _load(request, spec)
    item = (request.query_params.get("conversation", ""), request.query_params.get("criterion_id", ""))
    queue = build_queue(run, spec)
    if item not in queue:
        raise UserError(f"{item[0]} / {item[1]} is not in this labelling queue")
    record = next(r for r in run.conversations if r.id == item[0])
    left = remaining(queue, spec.labeller, RunFolder.open(run.path).labels())
    return page(
        request,
        "label_item.html",
        title="Label",
        spec=spec,
        record=record,
        criterion=item[1],
        rubric=run.manifest.criterion(item[1]),
        position=queue.index(item) + 1,
        total=len(queue),
        left=len(left),
    )


async def save_label(request: Request) -> Response:
    form = await read_form(request)
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    spec = _spec(parse_qsl(fields.get("queue", "")))
    run = _load(request, spec)
    conversation, criterion = fields.get("conversation", ""), fields.get("criterion_id", "")
    if (conversation, criterion) not in build_queue(run, spec):
        raise UserError(f"{conversation} / {criterion} is not in this labelling queue")
    value = fields.get("label", "")
    if value not in get_args(LabelValue):
        raise UserError("choose pass, fail or not applicable before saving")
    label = Label(
        labeller=spec.labeller,
        labelled_at=datetime.now(UTC),
        conversation_id=conversation,
        criterion_id=criterion,
        label=value,  # type: ignore[arg-type]
        note=fields.get("note", "").strip() or None,
    )
    await run_in_threadpool(RunFolder.open(run.path).append_labels, [label])
    query = urlencode({"conversation": conversation, "criterion_id": criterion})
    return RedirectResponse(f"/label/reveal?{spec.query()}&{query}", 303)


async def reveal_page(request: Request) -> Response:
    """After saving: the labeller's label next to the judge's verdict."""
    spec = _spec(list(request.query_params.multi_items()))
    run = _load(request, spec)
    conversation = request.query_params.get("conversation", "")
    criterion = request.query_params.get("criterion_id", "")
    mine = [
        x
        for x in RunFolder.open(run.path).labels()
        if (x.labeller, x.conversation_id, x.criterion_id) == (spec.labeller, conversation, criterion)
    ]
    if not mine:
        raise UserError("label this item first: the judge's verdict shows only after your label is saved")
    record = next(r for r in run.conversations if r.id == conversation)
    verdict = next(
        (v for v in run.verdicts if v.conversation_id == conversation and v.criterion_id == criterion), None
    )
    return page(
        request,
        "label_reveal.html",
        title="Saved",
        spec=spec,
        record=record,
        criterion=criterion,
        label=mine[-1],
        verdict=verdict,
        # A real conversation becomes a draft scenario in the reader (pages_confirm.py), never by a command.
        imported=run.manifest.kind == "imported",
    )


def routes() -> list[Route]:
    return [
        Route("/label", start_page),
        Route("/label", save_label, methods=["POST"]),
        Route("/label/next", next_item),
        Route("/label/item", item_page),
        Route("/label/reveal", reveal_page),
    ]
