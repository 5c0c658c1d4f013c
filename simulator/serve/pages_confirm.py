"""Real failures become scenarios: "confirmed failure" on an imported production conversation.

The reviewer reading an imported conversation (`simulator import`) in the desk confirms it as a failure;
the desk drafts a scenario from it with `draft-scenario`'s offline extraction (traces/draft.py), records its
provenance (run, conversation and trace id, the conversation's date, who confirmed it and why) in the
scenario's `notes`, and writes it under the scenarios folder's `drafts/` as `draft: true`, which `run`
refuses until a clinician sets the expected outcome and removes the flag: the suite grows in its own step,
never inside a `try`. The confirmation is also appended to the desk's data folder (`clinician_queue.jsonl`),
the queue a clinician works through. A draft never overwrites a file; the run folder is never written.
"""

from __future__ import annotations

__all__ = ["QUEUE_FILE", "routes"]

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from simulator.errors import UserError
from simulator.record.models import ConversationRecord
from simulator.record.redact import redact, redacted_record, safe_json
from simulator.serve.bodylimit import read_form
from simulator.serve.config import inside
from simulator.serve.names import Route
from simulator.serve.render import page
from simulator.traces.draft import draft_id, draft_offline, draft_yaml

QUEUE_FILE = "clinician_queue.jsonl"


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _append(path: Path, entry: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (safe_json(entry, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def confirm_failure(
    record: ConversationRecord, run_id: str, scenarios_dir: Path, data_dir: Path, reviewer: str, note: str
) -> Path:
    """Write the draft scenario for a confirmed failure and queue it for a clinician; the draft's path. The
    record and the reviewer's note are written redacted (a secret the desk knows now, its token, say, may
    have been registered after the run was written)."""
    record, note = redacted_record(record), redact(note)
    trace = record.bot_conversation_id or record.id
    when = f"{record.started_at:%Y-%m-%d}"
    provenance = (
        f"Confirmed as a failure by {reviewer} on {datetime.now(UTC):%Y-%m-%d} in the review desk"
        + (f" ({note})" if note else "")
        + f". Source: imported run {run_id}, conversation {record.id}, trace {trace}, dated {when}."
    )
    text = draft_yaml(record, draft_offline(record), "offline extraction", provenance)
    target = inside(scenarios_dir, f"drafts/{draft_id(record)}.yaml")  # a name the file system takes
    if target.exists():
        raise UserError(f"{target}: a draft from this conversation exists already; drafts never overwrite")
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("x", encoding="utf-8") as handle:
        handle.write(text)
    _append(
        data_dir / QUEUE_FILE,
        {
            "draft": str(target),
            "run_id": run_id,
            "conversation_id": record.id,
            "trace_id": trace,
            "conversation_date": when,
            "confirmed_by": reviewer,
            "confirmed_at": datetime.now(UTC).isoformat(),
            "note": note or None,
            "status": "queued for clinician review",
        },
    )
    return target


async def confirm(request: Request) -> Response:
    desk = _desk(request)
    name, conversation = request.path_params["run"], request.path_params["conversation"]
    run, _ = desk.index.load(name)
    if run.manifest.kind != "imported":
        raise UserError(
            f"run {name} was simulated; only imported production conversations become drafts here"
        )
    if desk.config.scenarios_dir is None:
        raise UserError("the desk has no scenarios folder to write the draft into; start it with --scenarios")
    record = next((r for r in run.conversations if r.id == conversation), None)
    if record is None:
        raise UserError(f"no conversation '{conversation}' in run {name}")
    form = await read_form(request)
    reviewer = str(form.get("reviewer", "")).strip()
    if not reviewer:
        raise UserError("write your name before confirming a failure")
    note = str(form.get("note", "")).strip()
    target = await run_in_threadpool(
        confirm_failure,
        record,
        run.manifest.run_id,
        desk.config.scenarios_dir,
        desk.config.data_folder,
        reviewer,
        note,
    )
    return page(request, "confirmed.html", title="Draft queued", name=name, record=record, target=str(target))


def routes() -> list[Route]:
    return [Route("/runs/{run}/c/{conversation}/confirm", confirm, methods=["POST"])]
