"""The blind labelling queue: which (conversation, criterion) items a labeller gets, in which order.

The queue is a pure function of its settings (run, criteria, sampling, n, seed), so it needs no server
state: a reload, a second tab or a restart of the desk gives the same queue, and what is left is what the
labeller has not labelled yet in labels.jsonl.
"""

from __future__ import annotations

__all__ = ["QueueSpec", "build_queue", "remaining", "review_items"]

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from simulator.analysis.rundata import RunData
from simulator.errors import UserError
from simulator.jsonbounds import loads_bounded
from simulator.readers import missing, text_lines
from simulator.record.models import Label
from simulator.record.selection import Item

# `review`: the items `simulator collect` sent for review (judged failures and a share of passes, in
# review.jsonl), shuffled so the order does not tell a failure from a calibration pass.
SAMPLINGS = ("all", "random", "stratified", "review")
_JUDGED = ("pass", "fail", "not_applicable")


@dataclass(frozen=True)
class QueueSpec:
    run: str
    labeller: str
    criteria: tuple[str, ...] = field(default_factory=tuple)
    sampling: str = "all"
    n: int = 20
    seed: int = 0

    @classmethod
    def from_query(cls, query: dict[str, str], criteria: list[str]) -> QueueSpec:
        labeller = " ".join(query.get("labeller", "").split())
        if not labeller:
            raise UserError("give your name as labeller: labels record who gave them")
        sampling = query.get("sampling", "all")
        if sampling not in SAMPLINGS:
            raise UserError(f"sampling '{sampling}': choose one of {', '.join(SAMPLINGS)}")
        try:
            n, seed = int(query.get("n") or 20), int(query.get("seed") or 0)
        except ValueError:
            raise UserError("n and seed must be whole numbers") from None
        if n < 1:
            raise UserError("n must be at least 1")
        if not criteria:
            raise UserError("pick at least one criterion to label")
        return cls(query.get("run", ""), labeller, tuple(sorted(set(criteria))), sampling, n, seed)

    def describe(self) -> str:
        """What the queue holds, every criterion named: `random 10 of each of asks-age, red-flags`."""
        criteria = ", ".join(self.criteria)
        if self.sampling in ("random", "stratified"):
            each = "of each of" if len(self.criteria) > 1 else "of"
            how = "random" if self.sampling == "random" else "stratified by the judge's verdict,"
            return f"{how} {self.n} {each} {criteria}"
        if self.sampling == "review":
            return f"the review queue of {criteria}"
        return f"every judged item of {criteria}"

    def query(self) -> str:
        pairs = [("run", self.run), ("labeller", self.labeller)]
        pairs += [("criterion", c) for c in self.criteria]
        pairs += [("sampling", self.sampling), ("n", str(self.n)), ("seed", str(self.seed))]
        return urlencode(pairs)


def _stratified(judged: dict[str, list[Item]], n: int, rng: random.Random) -> list[Item]:
    """Take items from each judge verdict in turn (pass, fail, n.a.), so rare verdicts are sampled too."""
    pools = [rng.sample(items, len(items)) for _, items in sorted(judged.items())]
    out: list[Item] = []
    while len(out) < n and any(pools):
        for pool in pools:
            if pool and len(out) < n:
                out.append(pool.pop())
    rng.shuffle(out)  # the order must not give the stratum away
    return out


def build_queue(run: RunData, spec: QueueSpec) -> list[Item]:
    """The items of the queue, shuffled with the seed (the order says nothing about scenario or verdict).

    `random` and `stratified` take `n` items of each criterion chosen, so every criterion is labelled (n
    over all of them would leave a rarely applicable criterion with none)."""
    if spec.sampling == "review":
        items = sorted(set(review_items(run)) & _judged(run, spec))
        random.Random(spec.seed).shuffle(items)
        return items
    by_criterion: dict[str, dict[str, list[Item]]] = {c: {} for c in spec.criteria}
    for verdict in run.verdicts:
        if verdict.criterion_id in spec.criteria and verdict.result in _JUDGED:
            item = (verdict.conversation_id, verdict.criterion_id)
            by_criterion[verdict.criterion_id].setdefault(verdict.result, []).append(item)
    for by_result in by_criterion.values():
        for items in by_result.values():
            items.sort()
    rng = random.Random(spec.seed)
    out: list[Item] = []
    for criterion in spec.criteria:  # sorted: the same queue from the same settings
        by_result = by_criterion[criterion]
        if spec.sampling == "stratified":
            out += _stratified(by_result, spec.n, rng)
            continue
        pool = sorted(item for items in by_result.values() for item in items)
        rng.shuffle(pool)
        out += pool if spec.sampling == "all" else pool[: spec.n]
    rng.shuffle(out)  # criteria interleaved: the order gives nothing away
    return out


def _judged(run: RunData, spec: QueueSpec) -> set[Item]:
    return {
        (v.conversation_id, v.criterion_id)
        for v in run.verdicts
        if v.criterion_id in spec.criteria and v.result in _JUDGED
    }


def review_items(run: RunData) -> list[Item]:
    """The (conversation, criterion) items the collector sent for review, in the order sent."""
    path = run.path / "review.jsonl"
    if missing(path):
        return []
    items: list[Item] = []
    for _, line in text_lines(path):  # bounded: a FIFO or a 10 GB line is refused, never waited on
        try:
            raw = loads_bounded(line, "the line")
            items.append((str(raw["conversation_id"]), str(raw["criterion_id"])))
        except (ValueError, KeyError, TypeError):
            continue  # a line being written
    return items


def remaining(queue: list[Item], labeller: str, labels: Iterable[Label]) -> list[Item]:
    """The queue's items this labeller has not labelled yet, in queue order."""
    done = {(x.conversation_id, x.criterion_id) for x in labels if x.labeller == labeller}
    return [item for item in queue if item not in done]
