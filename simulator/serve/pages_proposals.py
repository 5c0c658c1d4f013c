"""Proposed changes of a run (`simulator propose`): read each, edit it, accept or reject it.

A decision is appended to the desk's own data folder (loop/reviews.py), never to the run folder
or the proposal file; an edit is kept in the decision as the edited YAML, validated as a proposal first (a
broken edit is shown with its problems and nothing is recorded). `simulator try` applies the latest
accepted version and refuses a rejected one. State-changing requests pass the desk's CSRF and Origin
checks (serve/security.py) like every other form.
"""

from __future__ import annotations

__all__ = ["routes"]

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from simulator.config.yamlfile import MAX_FILE_BYTES, YAMLProblem, parse_yaml
from simulator.errors import UserError, field_path, pattern_or_message
from simulator.loop.markdown import proposal_diff
from simulator.loop.proposal import Proposal, load_proposal
from simulator.loop.reviews import ProposalReview, append_review, latest_review
from simulator.names import person_name
from simulator.readers import read_or_refuse
from simulator.record.hashing import sha256_file
from simulator.serve.bodylimit import read_form
from simulator.serve.config import child_folder
from simulator.serve.names import Route, part
from simulator.serve.render import page


def _desk(request: Request) -> Any:
    return request.app.state.desk


def _folder(request: Request) -> tuple[str, str, Path]:
    """The run's name, its run id and the folder of its proposals."""
    name = request.path_params["run"]
    run, _ = _desk(request).index.load(name)
    run_id = run.manifest.run_id
    root = _desk(request).config.proposals_dir
    return name, run_id, (child_folder(root, run_id) if root.is_dir() else root / run_id)


def _proposal_path(folder: Path, proposal_id: str) -> Path:
    path = child_folder(folder, f"{proposal_id}.yaml") if folder.is_dir() else folder / "missing"
    if not path.is_file():
        raise UserError(f"no proposal '{proposal_id}' in {folder}")
    return path


async def list_page(request: Request) -> Response:
    name, run_id, folder = _folder(request)
    data = _desk(request).config.data_folder
    rows = []
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    for path in files:
        if path.name.endswith(".accepted.yaml"):
            continue
        proposal = load_proposal(path)
        rows.append((proposal, latest_review(data, proposal.id, run_id)))
    return page(request, "proposals.html", title="Proposals", name=name, rows=rows, folder=str(folder))


async def proposal_page(request: Request) -> Response:
    name, _, folder = _folder(request)
    path = _proposal_path(folder, request.path_params["proposal"])
    proposal = load_proposal(path)
    return _show(request, name, path, proposal, read_or_refuse(path, MAX_FILE_BYTES), [])


def _show(
    request: Request, name: str, path: Path, proposal: Proposal, text: str, problems: list[str]
) -> Response:
    review = latest_review(_desk(request).config.data_folder, proposal.id, proposal.run_id)
    return page(
        request,
        "proposal.html",
        400 if problems else 200,
        title=proposal.id,
        name=name,
        p=proposal,
        diff=proposal_diff(proposal) if proposal.status == "proposed" else "",
        text=text,
        review=review,
        problems=problems,
        path=str(path),
    )


def _edited(text: str, original: str) -> tuple[str | None, list[str]]:
    """The edited YAML when it differs from the file (None when unchanged), and what is wrong with it."""
    if text.replace("\r\n", "\n").strip() == original.strip():
        return None, []
    try:
        Proposal.model_validate(parse_yaml(text, Path("proposal.yaml")).data)
    except YAMLProblem as exc:
        line = f" (line {exc.problem.line})" if exc.problem.line else ""
        return text, [f"the edited proposal{line}: {exc.problem.message}"]
    except ValidationError as exc:
        return text, [
            f"{field_path(e['loc']) or 'the proposal'}: {pattern_or_message(e)}" for e in exc.errors()[:8]
        ]
    return text.replace("\r\n", "\n"), []


async def decide(request: Request) -> Response:
    name, run_id, folder = _folder(request)
    path = _proposal_path(folder, request.path_params["proposal"])
    proposal = load_proposal(path)
    form = await read_form(request)
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    decision, reviewer = fields.get("decision", ""), fields.get("reviewer", "").strip()
    if decision not in ("accepted", "rejected"):
        raise UserError("choose accept or reject")
    if not reviewer:
        raise UserError("write your name as the reviewer before deciding")
    reviewer = person_name(reviewer, "reviewer")
    original = read_or_refuse(path, MAX_FILE_BYTES)
    edited, problems = _edited(fields.get("yaml", original), original)
    if problems:
        return _show(request, name, path, proposal, edited or original, problems)
    review = ProposalReview(
        proposal_id=proposal.id,
        run_id=run_id,
        proposal_file=str(path),
        proposal_sha256=sha256_file(path),
        decision=decision,  # type: ignore[arg-type]
        reviewer=reviewer,
        reviewed_at=datetime.now(UTC),
        note=fields.get("note", "").strip() or None,
        edited_yaml=edited if decision == "accepted" else None,
    )
    await run_in_threadpool(append_review, _desk(request).config.data_folder, review)
    return RedirectResponse(f"/runs/{part(name)}/proposals/{part(proposal.id)}", 303)


def routes() -> list[Route]:
    return [
        Route("/runs/{run}/proposals", list_page),
        Route("/runs/{run}/proposals/{proposal}", proposal_page),
        Route("/runs/{run}/proposals/{proposal}", decide, methods=["POST"]),
    ]
