"""`draft`, `accept-draft` and `reject-draft`: vignettes drafted from a pathway into a review queue, and the
clinician's decision on each (docs/authoring-at-scale.md)."""

from __future__ import annotations

__all__ = ["register"]

import argparse
from pathlib import Path
from typing import Any

from simulator.errors import UserError
from simulator.visible import echo


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    draft = subparsers.add_parser(
        "draft",
        help="draft distinct vignettes from a pathway document into a review queue (never run until accepted)",
    )
    draft.add_argument(
        "suite", type=Path, help="the suite the vignettes are for (its outcome levels, its vignettes)"
    )
    draft.add_argument("--pathway", type=Path, required=True, help="the pathway document (Markdown or text)")
    draft.add_argument("--count", type=int, default=10, help="drafts per disposition level (10)")
    draft.add_argument("--level", action="append", help="only this outcome level (repeat the flag)")
    draft.add_argument("--queue", type=Path, default=Path("drafts"), help="the review queue folder (drafts/)")
    draft.add_argument(
        "--threshold", type=float, default=None, help="near-duplicate at this facts overlap (0.8)"
    )
    draft.add_argument(
        "--model",
        help="a model writes the person around each card (e.g. anthropic:claude-sonnet-4-5); default offline",
    )
    draft.set_defaults(handler=cmd_draft)
    for verb in ("accept", "reject"):
        decide = subparsers.add_parser(
            f"{verb}-draft", help=f"{verb} a draft of the review queue, with your name and why"
        )
        decide.add_argument("queue", type=Path, help="the review queue folder")
        decide.add_argument(
            "drafts",
            nargs="+",
            metavar="draft",
            help="the draft's id (several: each in turn, one reviewer and reason)",
        )
        decide.add_argument("--reviewer", required=True, help="your name")
        decide.add_argument("--reason", required=True, help="why (kept with the decision)")
        if verb == "accept":
            decide.add_argument("--suite", type=Path, required=True, help="the suite it joins")
            decide.add_argument("--into", type=Path, help="the scenario folder (default: the suite's first)")
        decide.set_defaults(handler=cmd_decide, verb=verb)


def _inside(path: Path, folders: list[Path]) -> bool:
    here = path.resolve()
    return any(here == f.resolve() or f.resolve() in here.parents for f in folders)


def cmd_draft(args: argparse.Namespace) -> int:
    from simulator.api import load_suite
    from simulator.authoring.distinct import NEAR_DUPLICATE
    from simulator.authoring.draft import write_drafts
    from simulator.authoring.pathway import read_pathway

    if args.count < 1:
        raise UserError(f"--count {args.count}: give 1 or more drafts per level")
    threshold = NEAR_DUPLICATE if args.threshold is None else args.threshold
    if not 0 < threshold <= 1:
        raise UserError(f"--threshold {threshold}: give an overlap between 0 and 1, e.g. 0.8")
    suite = load_suite(args.suite)
    if suite.outcome is None:
        raise UserError(
            f"{args.suite}: the suite declares no outcome levels (outcome: key, levels); drafts need them"
        )
    folders = [suite.resolve(p) for p in suite.scenarios.paths]
    if _inside(args.queue, folders):
        raise UserError(
            f"--queue {args.queue} is inside the suite's scenario folders, so `run` would read the drafts; "
            "put the queue elsewhere (e.g. --queue drafts)"
        )
    levels = list(suite.outcome.levels)
    unknown = [lv for lv in args.level or [] if lv not in levels]
    if unknown:
        raise UserError(
            f"--level {unknown[0]}: not an outcome level of the suite; choose from {', '.join(levels)}"
        )
    pathway = read_pathway(args.pathway, levels)
    from simulator.config.loading import load_scenarios
    from simulator.eventloop import run_async

    # Drafts waiting, and those rejected (queue/rejected/): neither is drafted again.
    queued = load_scenarios([args.queue]) if any(args.queue.rglob("*.yaml")) else []

    existing = [*suite.scenarios_to_run(), *queued]
    batch = run_async(_draft(suite, pathway, existing, args, threshold))
    written = write_drafts(batch, args.queue)
    for line in batch.refused:
        echo(f"refused {line}")
    echo(f"{len(written)} drafts in {args.queue} from {args.pathway} ({len(batch.refused)} refused)")
    echo(f"next: review each in the desk (Drafts), or: simulator accept-draft {args.queue} ID --suite {args.suite} "
          "--reviewer NAME --reason WHY")  # fmt: skip
    return 0


async def _draft(
    suite: Any, pathway: Any, existing: list[Any], args: argparse.Namespace, threshold: float
) -> Any:
    """The drafts, offline or by `--model` through the suite's providers (closed however it ends)."""
    from simulator.authoring.draft import draft_vignettes, offline_writer

    key, count = suite.outcome.key, args.count
    if args.model is None:
        return await draft_vignettes(pathway, existing, key, count, args.level, threshold, offline_writer)
    from simulator.authoring.model_writer import model_writer
    from simulator.providers.hub import ModelHub

    hub = ModelHub.create(suite, cache=False)
    try:
        write = model_writer(hub, args.model)
        return await draft_vignettes(pathway, existing, key, count, args.level, threshold, write)
    finally:
        await hub.aclose()


def cmd_decide(args: argparse.Namespace) -> int:
    """Decide each draft given; each one accepted or rejected is printed as it is done, then one error lists
    those refused (review.py `_each`)."""
    from simulator.authoring.review import accept_drafts, reject_drafts

    if args.verb == "reject":
        reject_drafts(args.queue, args.drafts, args.reviewer, args.reason,
                      done=lambda draft, moved: echo(f"rejected {draft} (moved to {moved})"))  # fmt: skip
        return 0
    from simulator.api import load_suite

    suite = load_suite(args.suite)
    into = args.into or suite.resolve(suite.scenarios.paths[0])
    accept_drafts(args.queue, args.drafts, into, args.reviewer, args.reason, suite=suite,
                  done=lambda draft, written: echo(f"accepted {draft}: wrote {written}"))  # fmt: skip
    return 0
