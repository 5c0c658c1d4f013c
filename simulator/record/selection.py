"""Which verdicts count: the one rule every reader of a run's verdicts calls (report, show, judge and
re-judge, the engine's counts, compare, gate, the safety case, collect's trends and alerts, the desk).

`verdicts.jsonl` holds every judgement ever written to a run, and a reader counts from it by this rule:
1. A sample (one judgement among several behind a jury or `--samples k` verdict) is not a verdict: the
   combined verdict is. Samples are kept apart (stability and jury agreement read them).
2. The simulated user's fidelity checks judge the simulator, not the bot: kept apart, never in a bot table.
3. Bot verdicts come from one judge set: the one asked for (a hash or its prefix), else the one that wrote
   last; a criterion that set never judged (a re-judge does not always re-run the code checks) is taken
   from the most recent set that did, and named.
4. The last line per (conversation, criterion) wins.
5. Verdicts of conversations the run does not have are left out of every number, and named.

Labels follow the same last-line rule: each labeller's answer on an item is their last line for it.

Nothing outside this module filters verdicts on these properties (tests/test_verdict_selector_guard.py).
"""

from __future__ import annotations

__all__ = [
    "Item",
    "Selection",
    "by_item",
    "counted",
    "fidelity_items",
    "is_fidelity_check",
    "item_of",
    "judged_items",
    "labels_by_item",
    "latest_labels",
    "of_judge_set",
    "outcome_items_moved",
    "select_verdicts",
]

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.record.hashing import short_hash
from simulator.record.models import Label, Verdict

Item = tuple[str, str]  # (conversation id, criterion id)


class _HasKind(Protocol):
    @property
    def kind(self) -> str: ...


def is_fidelity_check(verdict: _HasKind) -> bool:
    """A check of the simulated user (`fidelity.*`): about whether the test was fair, not about the bot.
    Works on the record's verdicts and on the report's transcript verdicts alike."""
    return verdict.kind == "fidelity"


def counted(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts that count: the samples behind a combined verdict left out."""
    return [v for v in verdicts if not v.is_sample]


def of_judge_set(verdict: Verdict, judge_set: str) -> bool:
    """Whether `verdict` was written by the judge set `judge_set` (its full hash)."""
    return verdict.judge_set_hash == judge_set


def item_of(verdict: Verdict) -> Item:
    """The (conversation, criterion) a verdict decides."""
    return verdict.conversation_id, verdict.criterion_id


def by_item(verdicts: Iterable[Verdict]) -> dict[Item, Verdict]:
    """The verdicts by (conversation, criterion), the last line of an item winning."""
    return {item_of(v): v for v in verdicts}


def judged_items(verdicts: Iterable[Verdict], judge_set: str, *, result: str | None = None) -> set[Item]:
    """The items `judge_set` has a counted verdict for (with `result` only, when given): what a resume or a
    re-judge need not judge again, or (result "error") judges again."""
    return {
        item_of(v)
        for v in verdicts
        if v.judge_set_hash == judge_set and not v.is_sample and (result is None or v.result == result)
    }


def outcome_items_moved(verdicts: Iterable[Verdict], judge_set: str, scenarios: Iterable[Any]) -> set[Item]:
    """The outcome items `judge_set` compared against another expected value than their scenario now has
    (an imported conversation a clinician labelled since: record/labelled_levels.py): a re-judge judges them
    again, and its new line wins."""
    now = {s.id: s.expected for s in scenarios}
    moved = set()
    for v in verdicts:
        if v.judge_set_hash != judge_set or v.is_sample or not v.criterion_id.startswith("outcome."):
            continue
        expected = now.get(v.scenario_id, {}).get(v.criterion_id.removeprefix("outcome."))
        if expected is not None and v.expected != expected:
            moved.add(item_of(v))
    return moved


def fidelity_items(verdicts: Iterable[Verdict]) -> set[Item]:
    """The (conversation, fidelity check) items that have a verdict."""
    return {item_of(v) for v in verdicts if is_fidelity_check(v)}


@dataclass
class Selection:
    """A run's verdicts as every reader counts them (the rule in this module's docstring)."""

    verdicts: list[Verdict]  # bot verdicts: one per (conversation, criterion), chosen set (+ borrowed)
    judge_set: str | None  # the chosen set's hash; None when the run has no bot verdicts
    judge_sets: list[str]  # every set that wrote bot verdicts, most recent first
    borrowed: dict[str, str]  # criterion -> the set it was taken from
    # Every counted bot verdict line of each set (repeats included), in `judge_sets` order.
    by_set: dict[str, list[Verdict]] = field(default_factory=dict)
    samples: list[Verdict] = field(default_factory=list)  # the chosen set's samples
    fidelity: list[Verdict] = field(default_factory=list)  # latest per (conversation, check), any set
    strays: list[str] = field(default_factory=list)  # conversations verdicts named that the run lacks

    @property
    def own(self) -> list[Verdict]:
        """The chosen set's own verdicts (the borrowed criteria left out)."""
        return [v for v in self.verdicts if v.criterion_id not in self.borrowed]

    @property
    def others(self) -> int:
        """How many counted bot verdict lines the other judge sets wrote."""
        return sum(len(lines) for judge_set, lines in self.by_set.items() if judge_set != self.judge_set)


def _resolve_judge_set(recent_first: list[str], wanted: str | None) -> str | None:
    """The set `wanted` names (a hash or its prefix, as `--judge-set` takes it), else the one that wrote
    last; a UserError names the known sets when `wanted` matches none or several."""
    if not recent_first:
        if wanted:
            raise UserError(f"--judge-set {wanted}: this run has no verdicts at all")
        return None
    if wanted is None:
        return recent_first[0]
    bare = wanted.split(":", 1)[-1]
    matches = [h for h in recent_first if h == wanted or h.split(":", 1)[-1].startswith(bare)]
    if len(matches) != 1:
        known = ", ".join(short_hash(h) for h in recent_first)
        what = "matches no" if not matches else "matches more than one"
        raise UserError(f"--judge-set {wanted} {what} judge set of this run; known sets: {known}")
    return matches[0]


def select_verdicts(
    run: RunFolder | Iterable[Verdict],
    judge_set: str | None = None,
    *,
    conversations: Collection[str] | None = None,
    missing_ok: bool = False,
) -> Selection:
    """The verdicts of `run` (a run folder, or its verdicts as read) that count, by the rule above.

    `judge_set`: a hash or its prefix (UserError when it names no set of the run, unless `missing_ok`: then
    a set that wrote nothing yet is chosen with no verdicts of its own). `conversations`: the run's
    conversation ids; verdicts of any other conversation are left out and listed in `strays`."""
    every = run.verdicts() if isinstance(run, RunFolder) else run
    by_set: dict[str, dict[Item, Verdict]] = {}
    lines: dict[str, list[Verdict]] = {}
    last_position: dict[str, int] = {}
    fidelity: dict[Item, Verdict] = {}
    all_samples: list[Verdict] = []
    position = 0
    for verdict in every:
        if verdict.is_sample:
            all_samples.append(verdict)
        elif is_fidelity_check(verdict):
            fidelity[item_of(verdict)] = verdict
        else:
            by_set.setdefault(verdict.judge_set_hash, {})[item_of(verdict)] = verdict
            lines.setdefault(verdict.judge_set_hash, []).append(verdict)
            last_position[verdict.judge_set_hash] = position
            position += 1
    recent_first = sorted(last_position, key=lambda h: -last_position[h])
    if missing_ok and judge_set is not None and judge_set not in by_set:
        chosen: str | None = judge_set
    else:
        chosen = _resolve_judge_set(recent_first, judge_set)
    verdicts, borrowed = _chosen(by_set, chosen, recent_first)
    strays: list[str] = []
    if conversations is not None:
        strays = sorted({v.conversation_id for v in verdicts if v.conversation_id not in conversations})
        verdicts = [v for v in verdicts if v.conversation_id in conversations]
    return Selection(
        verdicts=verdicts,
        judge_set=chosen,
        judge_sets=recent_first,
        borrowed=borrowed,
        by_set={h: lines[h] for h in recent_first},
        samples=[
            v
            for v in all_samples
            if v.judge_set_hash == chosen and (conversations is None or v.conversation_id in conversations)
        ],
        fidelity=[
            v for v in fidelity.values() if conversations is None or v.conversation_id in conversations
        ],
        strays=strays,
    )


def _chosen(
    by_set: dict[str, dict[Item, Verdict]], chosen: str | None, recent_first: list[str]
) -> tuple[list[Verdict], dict[str, str]]:
    """One verdict per (conversation, criterion) from the chosen set; criteria it never judged are taken
    from the most recent set that did."""
    if chosen is None:
        return [], {}
    picked = dict(by_set.get(chosen, {}))
    have = {criterion for _, criterion in picked}
    borrowed: dict[str, str] = {}
    for judge_set in recent_first:
        for (conversation, criterion), verdict in by_set[judge_set].items():
            if criterion in have or borrowed.get(criterion, judge_set) != judge_set:
                continue
            borrowed[criterion] = judge_set
            picked[(conversation, criterion)] = verdict
    return list(picked.values()), borrowed


def latest_labels(labels: Iterable[Label]) -> dict[str, dict[Item, Label]]:
    """Each labeller's answer per (conversation, criterion): the last line written wins."""
    out: dict[str, dict[Item, Label]] = {}
    for label in labels:
        out.setdefault(label.labeller, {})[(label.conversation_id, label.criterion_id)] = label
    return out


def labels_by_item(labels: Iterable[Label]) -> dict[Item, dict[str, str]]:
    """(conversation, criterion) -> labeller -> label, by the same rule (items in the order first labelled)."""
    out: dict[Item, dict[str, str]] = {}
    for label in labels:
        out.setdefault((label.conversation_id, label.criterion_id), {})[label.labeller] = label.label
    return out
