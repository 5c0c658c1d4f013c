"""`simulator propose RUN`: one reviewable change request per failing (criterion, scenario group).

It reads the run folder and never writes into it: the proposals go to `proposals/<run-id>/` (or --out),
one YAML file (what `simulator try` applies) and one Markdown file (what a reviewer reads) each. With a
model (--model, else the suite's judge model) the model writes each change; with none, or --offline,
templates write it from the evidence (docs/loop.md).
"""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.commands.outputs import write_output
from simulator.errors import UserError
from simulator.visible import echo

if TYPE_CHECKING:
    from simulator.analysis.rundata import RunData
    from simulator.loop.failures import FailureGroup
    from simulator.loop.proposal import Proposal
    from simulator.loop.writer import BotContext

RUN_FILES = ("manifest.json", "conversations.jsonl", "verdicts.jsonl")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    propose = subparsers.add_parser(
        "propose", help="turn a run's failures into reviewable change requests (proposals/<run-id>/)"
    )
    propose.add_argument("run", type=Path, help="runs/<run-id>")
    propose.add_argument("--out", type=Path, help="folder for the proposals (default proposals/<run-id>)")
    propose.add_argument("--model", help="model that writes the changes (default: the suite's judge model)")
    propose.add_argument("--offline", action="store_true", help="write from templates, even with a model")
    propose.add_argument("--hazards", type=Path, help="hazard log (YAML): hazard id -> criteria")
    propose.add_argument("--judge-set", help="judge set of RUN (default: its latest)")
    propose.set_defaults(handler=cmd_propose)


def _read_hashes(run: Path) -> dict[str, str]:
    from simulator.record.hashing import sha256_file

    return {name: sha256_file(run / name) for name in RUN_FILES if (run / name).is_file()}


def _out_folder(args: argparse.Namespace, run: RunData) -> Path:
    out: Path = args.out or Path("proposals") / run.manifest.run_id
    resolved, folder = out.resolve(), run.path.resolve()
    if resolved == folder or folder in resolved.parents:
        raise UserError(
            f"--out {out}: proposals are never written into the run folder; choose another folder"
        )
    return out


def _proposals(
    groups: list[FailureGroup], ctx: BotContext, run: RunData, read: dict[str, str], spec: str | None
) -> list[Proposal]:
    from simulator.loop.writer import offline_proposal

    if spec is None:
        return [offline_proposal(g, ctx, run, read) for g in groups]
    from simulator.eventloop import run_async

    return run_async(_ask(groups, ctx, run, read, spec))


async def _ask(
    groups: list[FailureGroup], ctx: BotContext, run: RunData, read: dict[str, str], spec: str
) -> list[Proposal]:
    from simulator.loop.writer import model_proposal
    from simulator.providers.hub import ModelHub

    suite = run.manifest.rebuild_suite(run.path)
    hub = ModelHub.create(suite, cache=False).for_role("judge")
    try:
        client, model = hub.client(spec)
        return [await model_proposal(g, ctx, run, read, client, model, spec) for g in groups]
    finally:
        await hub.aclose()


def write_proposals(out: Path, proposals: list[Proposal], prompt: str | None) -> list[Path]:
    """Each proposal as <id>.yaml and <id>.md under `out`; the YAML paths, in order."""
    from simulator.loop.markdown import proposal_diff, proposal_markdown
    from simulator.loop.proposal import proposal_yaml

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for proposal in proposals:
        path = out / f"{proposal.id}.yaml"
        write_output(path, proposal_yaml(proposal))
        diff = proposal_diff(proposal, prompt) if proposal.status == "proposed" else ""
        write_output(out / f"{proposal.id}.md", proposal_markdown(proposal, diff))
        paths.append(path)
    return paths


def cmd_propose(args: argparse.Namespace) -> int:
    from simulator.analysis.rundata import load_run
    from simulator.loop.failures import group_failures, load_hazards
    from simulator.loop.writer import bot_context

    run = load_run(args.run, args.judge_set)
    hazards = load_hazards(args.hazards) if args.hazards else None
    groups = group_failures(run, hazards)
    if not groups:
        echo(f"{args.run}: no failed criterion, nothing to propose")
        return 0
    ctx = bot_context(run)
    judge_model = run.manifest.suite.judges.model if run.manifest.suite else None
    spec = None if args.offline else (args.model or judge_model)
    out = _out_folder(args, run)
    proposals = _proposals(groups, ctx, run, _read_hashes(args.run), spec)
    paths = write_proposals(out, proposals, ctx.prompt)
    echo(f"{len(proposals)} proposals from {args.run} ({'model ' + spec if spec else 'offline templates'}):")
    for proposal, path in zip(proposals, paths, strict=True):
        what = proposal.change.summary if proposal.change else f"ERROR: {proposal.error}"
        echo(f"  {path}  [{proposal.criterion_id} · {proposal.group} · {proposal.failures.split(' (')[0]}]")
        echo(f"    {what}")
    echo(f"next: review them (simulator serve, or edit the YAML), then: simulator try {paths[0]}")
    return 0
