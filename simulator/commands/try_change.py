"""`simulator try PROPOSAL`: apply a proposed change, re-run the whole suite, and say whether it helped.

For a bot whose prompt is in the suite (a `chat` bot) the accepted prompt edits are applied to a copy of its system prompt (written beside the
proposal; the user's file is never edited) and the run's suite, as its manifest recorded it, runs again
with that copy: the same scenarios, repeats and seed. For any other bot the change is made outside the
engine: `--bot-version` records which version of the bot now runs. Either way the new run is compared with
the proposal's run by `compare` (scenario-clustered paired tests) and one verdict is printed: fixed,
improved, no evidence, or broke something, with every criterion that got worse and its flips, and the cost
and latency change. A scenario added, removed or edited since the baseline run is refused, by name: the
numbers must move because the bot changed, not the test. A record of the try (`<id>.try-<time>.json`,
with the hashes of what it read) is written beside the proposal.
"""

from __future__ import annotations

__all__ = ["register"]

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.errors import UserError
from simulator.plural import plural
from simulator.visible import echo

if TYPE_CHECKING:
    from simulator.config.bot_kinds import PromptedBot
    from simulator.config.scenario import Scenario
    from simulator.config.suite import Suite
    from simulator.loop.proposal import Proposal
    from simulator.record.manifest import Manifest

EXIT_BROKE = 1  # the change made something worse: a CI step running `try` fails


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tried = subparsers.add_parser(
        "try",
        help="apply a proposal, re-run the whole suite, compare: fixed / improved / no evidence / broke something",
    )
    tried.add_argument("proposal", type=Path, help="proposals/<run-id>/<id>.yaml")
    tried.add_argument("--out", type=Path, help="the new run folder (default runs/<run-id>)")
    tried.add_argument("--bot-version", help="for a python or http bot: the version that has the change")
    tried.add_argument(
        "--desk-data",
        "--data",
        dest="desk_data",
        type=Path,
        help="the desk's data folder, its review decisions (default: the desk's, <runs>/.desk)",
    )
    tried.add_argument("--alpha", type=float, default=0.05, help="significance level of the comparison")
    tried.add_argument("--no-progress", action="store_true", help="no progress bar")
    tried.set_defaults(handler=cmd_try)


def scenario_set_changes(manifest: Manifest, scenarios: list[Scenario]) -> list[str]:
    """Scenarios added, removed or edited since the baseline run, each named; [] when the set is the same."""
    from simulator.record.hashing import sha256_file

    before = {entry.id: entry for entry in manifest.scenarios}
    now = {s.id: s for s in scenarios}
    changes = [f"{sid} added" for sid in sorted(set(now) - set(before))]
    changes += [f"{sid} removed" for sid in sorted(set(before) - set(now))]
    for sid in sorted(set(now) & set(before)):
        source, recorded = now[sid]._source, before[sid].sha256
        if recorded and source and Path(source).is_file() and sha256_file(Path(source)) != recorded:
            changes.append(f"{sid} edited ({source})")
    return changes


def _reviewed(proposal: Proposal, path: Path, desk_data: Path) -> tuple[Proposal, str]:
    """The proposal as the desk's latest decision left it (an accepted edit replaces it); refuse a rejection."""
    from simulator.loop.proposal import load_proposal
    from simulator.loop.reviews import latest_review

    review = latest_review(desk_data, proposal.id, proposal.run_id)
    if review is None:
        return proposal, "not reviewed in the desk: applied as the file says"
    if review.decision == "rejected":
        raise UserError(
            f"{path}: {review.reviewer} rejected this proposal on {review.reviewed_at:%Y-%m-%d}; not applied"
        )
    if review.edited_yaml:
        edited = path.with_name(f"{proposal.id}.accepted.yaml")
        edited.write_text(review.edited_yaml, encoding="utf-8")
        return load_proposal(edited), f"accepted with edits by {review.reviewer} ({edited})"
    return proposal, f"accepted by {review.reviewer}"


def _apply_prompt(suite: Suite, bot: PromptedBot, proposal: Proposal, beside: Path) -> dict[str, str]:
    """Point the suite's bot at a copy of its prompt with the edits applied; what was read and written."""
    from simulator.loop.proposal import apply_edits
    from simulator.record.hashing import sha256_text

    assert proposal.change is not None
    if proposal.change.kind == "tool_description":
        if bot.decision_tool is None:
            raise UserError(
                f"the change edits the decision tool's description, but the {suite.bot.type} bot has no "
                "decision_tool"
            )
        what = "the decision tool's description"
        before = bot.decision_tool.description
        after = apply_edits(before, proposal.change.edits, what)
        bot.decision_tool.description = after  # in the suite as run (recorded in its manifest), not the file
        return {"tool_description_before": sha256_text(before), "tool_description_after": sha256_text(after)}
    if bot.system_prompt_file:
        from simulator.config.yamlfile import YAMLProblem, read_text_file  # not on `simulator --help`'s path

        source = suite.resolve(bot.system_prompt_file)
        try:
            before = read_text_file(source)
        except YAMLProblem as exc:
            raise UserError(f"{exc.problem} (the {suite.bot.type} bot's prompt)") from None
    else:
        source, before = Path("(inline system_prompt)"), bot.system_prompt or ""
    after = apply_edits(before, proposal.change.edits)
    copy = beside / f"{proposal.id}.prompt{source.suffix or '.txt'}"
    copy.write_text(after, encoding="utf-8")
    bot.system_prompt_file, bot.system_prompt = str(copy.resolve()), None
    return {
        "prompt": str(source),
        "prompt_before": sha256_text(before),
        "prompt_after": sha256_text(after),
        "copy": str(copy),
    }


def _plan(proposal: Proposal, args: argparse.Namespace) -> tuple[Any, Suite, list[Scenario], dict[str, str]]:
    from simulator.analysis.rundata import load_run
    from simulator.config.bot_kinds import prompted
    from simulator.config.factors import suite_scenarios

    if proposal.status == "error" or proposal.change is None:
        raise UserError(
            f"{args.proposal}: this proposal has no usable change ({proposal.error}); it is never applied"
        )
    baseline = load_run(Path(proposal.run))
    suite = baseline.manifest.rebuild_suite(baseline.path)
    scenarios = suite_scenarios(suite, suite.scenarios.tags)
    changes = scenario_set_changes(baseline.manifest, scenarios)
    if changes:
        raise UserError(
            f"the scenario set changed since {proposal.run}: {'; '.join(changes)}. Keep the scenarios stable "
            "while trying a change, and add new ones in their own step (run the suite again as a new baseline)"
        )
    bot = prompted(suite.bot)
    if bot is not None:
        applied = _apply_prompt(suite, bot, proposal, args.proposal.parent)
    elif not args.bot_version:
        raise UserError(
            f"the bot is {suite.bot.describe()}: make the change in the bot itself, then name that version "
            "with --bot-version (e.g. a git commit) so the record says what ran"
        )
    else:
        applied = {"bot_version": args.bot_version, "applied": "outside the engine"}
    return baseline, suite, scenarios, applied


def cmd_try(args: argparse.Namespace) -> int:
    from simulator import api
    from simulator.analysis.compare import compare_loaded
    from simulator.analysis.rundata import load_run
    from simulator.api.options import RunOptions
    from simulator.loop.change_verdict import change_verdict
    from simulator.loop.proposal import load_proposal
    from simulator.record.hashing import sha256_file

    proposal = load_proposal(args.proposal)
    desk_data = args.desk_data or Path(proposal.run).parent / ".desk"  # where `simulator serve` keeps them
    proposal, review = _reviewed(proposal, args.proposal, desk_data)
    baseline, suite, scenarios, applied = _plan(proposal, args)
    echo(
        f"trying {proposal.id} ({review}) on {suite.bot.describe()}: the whole suite, {plural(len(scenarios), 'scenario')}"
    )
    # Through the API's door, as `run` goes: the environment and the preflight checks before anything runs.
    options = RunOptions(out=args.out, progress=not args.no_progress, freeze_gc=True)
    result = api.run_sync(api.execute(api.Plan(suite, scenarios), options)).folder
    candidate = load_run(result)
    comparison = compare_loaded(baseline, candidate, args.alpha)
    verdict = change_verdict(comparison, baseline, candidate, proposal.criterion_id, proposal.scenarios)
    echo(f"verdict: {verdict.verdict.upper()}")
    for line in verdict.lines:
        echo(f"  {line}")
    echo(
        f"baseline {baseline.path} → with the change {result}; details: simulator compare {baseline.path} {result}"
    )
    record = {
        "proposal": str(args.proposal),
        "proposal_sha256": sha256_file(args.proposal),
        "review": review,
        "baseline": str(baseline.path),
        "candidate": str(result),
        "applied": applied,
        "tried_at": datetime.now(UTC).isoformat(),
        "verdict": verdict.model_dump(mode="json"),
    }
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    (args.proposal.parent / f"{proposal.id}.try-{stamp}.json").write_text(
        json.dumps(record, indent=2) + "\n", encoding="utf-8"
    )
    return EXIT_BROKE if verdict.verdict == "broke something" else 0
