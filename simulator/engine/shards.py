"""Deterministic shards: the i-th of K disjoint parts of a plan, chosen by a hash of each item's key, so a
shard's items never depend on the machine, the order of files or the number of scenarios added later."""

from __future__ import annotations

__all__ = ["in_shard", "parse_shard", "plan_hash"]

import hashlib
import json

from simulator.errors import UserError, in_both
from simulator.record.manifest import ScenarioEntry, ShardInfo


def parse_shard(text: str) -> ShardInfo:
    """`2/4` -> the second of four shards (1-based, as people count)."""
    index, sep, count = text.partition("/")
    try:
        shard = ShardInfo(index=int(index), count=int(count), plan_hash="")
    except ValueError:
        shard = None
    if not sep or shard is None or not 1 <= shard.index <= shard.count:
        shown = in_both(f"--shard {text}", f"parse_shard({text!r})")
        raise UserError(f"{shown}: write i/K with 1 <= i <= K, e.g. 2/4 (the 2nd of 4)")
    return shard


def in_shard(key: str, shard: ShardInfo) -> bool:
    """Whether the item `scenario#repeat` belongs to `shard` (stable: a hash of the key alone)."""
    digest = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")
    return digest % shard.count == shard.index - 1


def plan_hash(scenarios: list[ScenarioEntry], runs: int) -> str:
    """What every shard of one plan shares: the scenarios (ids and file hashes) and the repeats."""
    payload = {"runs": runs, "scenarios": sorted((s.id, s.sha256 or "") for s in scenarios)}
    return "sha256:" + hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()
