"""`simulator merge SHARDS --out RUN`: join shard run folders into one ordinary run folder.

The shards must be one experiment: one plan (scenarios, their file hashes, repeats), one judge set, and the
same bot, seed, models, prompts, measured settings and simulator version (`_experiment_problems`); and they
must hold every item of the plan exactly once. Anything else is a clear error that names the difference.
A setting that names a file (`user.vocabulary`) is compared by the file's content hash each shard recorded,
so two checkouts of one suite (`/home/a/suite/...`, `/tmp/ci/suite/...`) merge.
What may differ is what a resume may change (engine/operational.py: budgets, connections, timeouts) and
what says where and when a shard ran (times, sessions, the suite file's path and bytes, the host). The shards are read,
never changed; the merged folder is new, so reports, compare and re-judging work on it unchanged.
"""

from __future__ import annotations

__all__ = ["MergeResult", "merge_shards"]

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.config.suite import Suite
from simulator.engine.operational import content_note, measured_differences
from simulator.engine.worker_share import LIMITS
from simulator.errors import Problem, UserError
from simulator.record.counting import verdict_counts
from simulator.record.folder import RunFolder, latest_by_id
from simulator.record.manifest import Manifest, Session


@dataclass
class MergeResult:
    folder: Path
    conversations: int
    verdicts: int  # by the rule of record/counting.py, as `run` counts them
    shards: int
    fidelity_checks: int = 0  # the simulated user's, counted apart


def _names(items: list[str], limit: int = 8) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _check_plan(shards: list[tuple[RunFolder, Manifest]]) -> None:
    first_folder, first = shards[0]
    for folder, manifest in shards:
        if manifest.shard is None:
            raise UserError(f"{folder.path} is not a shard (it was not run with --shard i/K)")
        if first.shard is None or manifest.shard.plan_hash != first.shard.plan_hash:
            raise UserError(
                f"{folder.path} and {first_folder.path} are shards of different plans (scenarios, scenario "
                "files or repeats differ); merge shards of one `simulator run SUITE --shard i/K` only"
            )
        mine, theirs = manifest.judge_set, first.judge_set
        if (mine.hash if mine else None) != (theirs.hash if theirs else None):
            raise UserError(
                f"{folder.path} was judged with another judge set than {first_folder.path}; re-judge one with "
                f"`simulator judge` so they match, then merge"
            )
    problems = [
        p for folder, manifest in shards[1:] for p in _experiment_problems(shards[0], folder, manifest)
    ]
    if problems:
        raise UserError(
            "these shards are not one experiment, so they cannot be merged into one run", problems
        )
    indexes = Counter(m.shard.index for _, m in shards if m.shard is not None)
    twice = sorted(i for i, n in indexes.items() if n > 1)
    if twice:
        raise UserError(f"shard {', '.join(map(str, twice))} given more than once")


def _identity(manifest: Manifest) -> dict[str, Any]:
    """What identifies a run's experiment beyond its suite: simulator, bot release, resolved models, prompts."""
    identity: dict[str, Any] = {
        "kind": manifest.kind,
        "simulator version": manifest.package_version,
        "models.user": manifest.models.user,  # resolved (`auto` is not): the suite's bot and judge say the rest
    }
    if manifest.suite is None:
        identity.update({"models.bot": manifest.models.bot, "models.judge": manifest.models.judge})
    parts = manifest.bot_identity.parts if manifest.bot_identity else {}
    identity.update({f"bot identity ({how})": value for how, value in parts.items()})
    identity.update({f"{role} prompt": entry.hash for role, entry in manifest.prompts.items()})
    return identity


def _experiment_problems(
    first: tuple[RunFolder, Manifest], folder: RunFolder, manifest: Manifest
) -> list[Problem]:
    """One problem per setting in which `manifest`'s shard is another experiment than the first shard."""
    mine, theirs = _identity(manifest), _identity(first[1])
    if manifest.git_commit and first[1].git_commit:  # a commit is known only in a git checkout
        mine["simulator commit"], theirs["simulator commit"] = manifest.git_commit, first[1].git_commit
    differences = []
    if manifest.suite is not None and first[1].suite is not None:
        differences += measured_differences(
            manifest.suite, manifest.setting_files, first[1].suite, first[1].setting_files
        )
    differences += [(k, mine.get(k), theirs.get(k)) for k in sorted(mine.keys() | theirs.keys())]
    shard = f" (--shard {manifest.shard.index}/{manifest.shard.count})" if manifest.shard else ""
    fix = f"re-run this shard{shard} with the suite, flags and simulator version {first[0].path} ran with"
    problems: dict[tuple[str, str], Problem] = {}  # a bot's factory is a setting and its identity: said once
    for what, here, there in differences:
        if here != there:
            text = f"{here!r} here, {there!r} in {first[0].path}{content_note(here, there)}; {fix}"
            problems.setdefault((repr(here), repr(there)), Problem(str(folder.path), text, field=what))
    return list(problems.values())


def _expected_keys(manifest: Manifest) -> set[str]:
    runs = manifest.suite.runs if manifest.suite is not None else 1
    return {f"{s.id}#{r}" for s in manifest.scenarios for r in range(runs)}


def merge_shards(
    paths: list[Path], out: Path, *, allow_missing: bool = False, suite: Suite | None = None
) -> MergeResult:
    """Write one run folder holding every shard's latest conversations and all their verdicts. `suite`, when
    given, is recorded as the run's (forked workers ran a share of its limits each: engine/worker_share.py)."""
    if not paths:
        raise UserError("name the shard run folders to merge: simulator merge runs/a runs/b --out runs/all")
    shards = [(folder, folder.read_manifest()) for folder in map(RunFolder.open_unsealed, paths)]
    running = [folder.path for folder, manifest in shards if manifest.status == "running"]
    if running:  # it may still be writing (or was killed): its last records may be half-written or missing
        raise UserError(
            f"{running[0]}: this shard's manifest says running; wait for it to finish, or finish it with "
            f"`simulator run --resume {running[0]}`, then merge"
        )
    _check_plan(shards)
    owner: dict[str, Path] = {}
    duplicated: list[str] = []
    for folder, _ in shards:
        for key in latest_by_id(folder.conversations()):
            if key in owner:
                duplicated.append(f"{key} ({owner[key].name} and {folder.path.name})")
            owner[key] = folder.path
    if duplicated:
        raise UserError(f"items in more than one shard: {_names(sorted(duplicated))}")
    first = shards[0][1]
    missing = sorted(_expected_keys(first) - set(owner))
    if missing and not allow_missing:
        count = first.shard.count if first.shard else "?"
        raise UserError(
            f"{len(missing)} items of the plan are in no shard: {_names(missing)}; finish the shards with "
            f"`simulator run --resume SHARD`, add the missing ones of the {count}, or pass --allow-missing"
        )
    return _write(shards, out, missing, suite)


def _write(
    shards: list[tuple[RunFolder, Manifest]], out: Path, missing: list[str], suite: Suite | None = None
) -> MergeResult:
    first = shards[0][1]
    merged = first.model_copy(deep=True)
    if (
        suite is not None and merged.suite is not None
    ):  # the limits only: the rest is as the shard recorded it
        merged.suite.concurrency = suite.concurrency
        for name, settings in merged.suite.providers.items():
            if name in suite.providers:
                mine = suite.providers[name]
                merged.suite.providers[name] = settings.model_copy(
                    update={key: getattr(mine, key) for key in LIMITS}
                )
    merged.run_id = out.name
    merged.shard = None
    merged.planned = first.shard.total if first.shard else merged.planned
    merged.created_at = min(m.created_at for _, m in shards)
    merged.sessions = [session for _, m in shards for session in m.sessions]
    merged.sessions.append(Session(command="merge", started_at=datetime.now(UTC)))
    merged.source = {"merged_from": [str(folder.path) for folder, _ in shards], "missing": missing}
    states = {m.status for _, m in shards}
    merged.status = "complete" if states == {"complete"} and not missing else "interrupted"
    target = RunFolder.create(out, merged)
    conversations = verdicts = fidelity = 0
    stop_reasons: Counter[str] = Counter()
    for folder, _ in shards:
        for record in latest_by_id(folder.conversations()).values():
            target.append_conversation(record)
            stop_reasons[record.stop_reason] += 1
            conversations += 1
        batch = list(folder.verdicts())
        target.append_verdicts(batch)
        counted = verdict_counts(batch)  # the rule `run` counts by: fidelity checks apart, samples out
        verdicts, fidelity = verdicts + counted[0], fidelity + counted[1]
    merged.counts.conversations = conversations
    merged.counts.stop_reasons = dict(stop_reasons)
    merged.counts.errors = stop_reasons.get("error", 0)
    merged.sessions[-1].ended_at = merged.ended_at = datetime.now(UTC)
    target.write_manifest(merged)
    return MergeResult(out, conversations, verdicts, len(shards), fidelity)
