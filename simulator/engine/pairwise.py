"""Pairwise judging of two stored runs: the criterion, the conversations both finished, and every pair
judged both ways round in the session pool (at most `concurrency` pairs in flight, like a run's
conversations). It reads the two runs and writes nothing into them."""

from __future__ import annotations

__all__ = ["common_conversations", "judge_pairs", "pairwise_criterion"]

from pathlib import Path

from simulator.config.suite import Suite
from simulator.engine.session import pool
from simulator.errors import UserError
from simulator.judging.criteria import Criterion, load_criteria
from simulator.judging.pairwise import PairwiseResult, judge_pair
from simulator.providers.hub import ModelHub
from simulator.record.folder import RunFolder, latest_by_id
from simulator.record.models import ConversationRecord

Records = dict[str, ConversationRecord]


def pairwise_criterion(suite: Suite, judges: list[Path] | None, criterion_id: str) -> Criterion:
    """The criterion `criterion_id`, from `judges` or else the suite's judges.paths."""
    paths = [p.resolve() for p in judges] if judges else [suite.resolve(p) for p in suite.judges.paths]
    if not paths:
        raise UserError("no criteria: pass --judges PATH, or give the suite a judges.paths")
    criteria = {c.id: c for c in load_criteria(paths)}
    criterion = criteria.get(criterion_id)
    if criterion is None:
        raise UserError(
            f"no criterion '{criterion_id}' in {', '.join(map(str, paths))}; ids: {', '.join(criteria)}"
        )
    return criterion


def common_conversations(
    folder_a: RunFolder, folder_b: RunFolder, criterion: Criterion
) -> tuple[Records, Records, list[str]]:
    """Each run's latest records, and the ids finished in both that the criterion applies to, sorted."""
    a = latest_by_id(folder_a.conversations())
    b = latest_by_id(folder_b.conversations())
    common = sorted(
        cid
        for cid in set(a) & set(b)
        if a[cid].stop_reason != "error" and b[cid].stop_reason != "error" and criterion.applies(a[cid].tags)
    )
    if not common:
        raise UserError(
            f"{folder_a.path} and {folder_b.path} share no finished conversation (scenario#repeat) "
            f"that '{criterion.id}' applies to"
        )
    return a, b, common


async def judge_pairs(
    suite: Suite,
    model: str,
    criterion: Criterion,
    pairs: tuple[Records, Records, list[str]],
    concurrency: int | None,
) -> list[PairwiseResult]:
    """Judge every common conversation both ways round in the session pool, at most `concurrency` (or the
    suite's) at once; the results come back in the order of the ids."""
    a, b, common = pairs
    hub = ModelHub.create(suite)
    client, bare = hub.client(model)
    results: dict[str, PairwiseResult] = {}

    async def one(cid: str) -> None:
        results[cid] = await judge_pair(
            client, bare, criterion, cid, a[cid].turns, b[cid].turns,
            temperature=suite.judges.temperature, max_tokens=suite.judges.max_tokens,
        )  # fmt: skip

    try:
        await pool(iter(common), concurrency or suite.concurrency, one)
    finally:
        await hub.aclose()
    return [results[cid] for cid in common]
