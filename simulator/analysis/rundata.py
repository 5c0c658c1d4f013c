"""One run, loaded for reporting: manifest, latest conversations, the chosen judge set's verdicts, expectations."""

from __future__ import annotations

__all__ = ["JudgeSetInfo", "RunData", "load_run", "short_hash"]

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from simulator.config.suite import OutcomeConfig
from simulator.errors import UserError
from simulator.record.compact import Sharing
from simulator.record.folder import RunFolder, latest_by_id
from simulator.record.manifest import Manifest
from simulator.record.models import ConversationRecord, Verdict


def short_hash(value: str | None, length: int = 12) -> str:
    """`sha256:0123abcd...` shortened for people: the first `length` hex digits."""
    if not value:
        return "(none)"
    return value.split(":", 1)[-1][:length]


class JudgeSetInfo(BaseModel):
    """One judge set that judged this run: its hash, how many verdicts it wrote, its judge models."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    hash: str
    verdicts: int
    criteria: list[str]
    judge_models: list[str]
    chosen: bool = False


@dataclass
class RunData:
    """Everything a report reads from one run folder, already de-duplicated and filtered."""

    path: Path
    manifest: Manifest
    conversations: list[ConversationRecord]
    attempts: Counter[str]
    verdicts: list[Verdict]
    judge_set: str | None
    judge_sets: list[JudgeSetInfo]
    borrowed: dict[str, str]
    expected: dict[str, dict[str, Any]]
    scenario_order: list[str]
    warnings: list[str] = field(default_factory=list)
    # Every judgement behind an aggregated verdict (samples, jury members) of the chosen set; reports never
    # count them as verdicts (stability and jury agreement read them).
    samples: list[Verdict] = field(default_factory=list)
    # Derived tables computed once per load and shared by every metric (statuses, verdicts by conversation).
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    # Simulator fidelity verdicts (kind `fidelity`), latest per (conversation, check). They judge the
    # simulated user, so they are kept apart from `verdicts` and no bot table ever counts them.
    fidelity: list[Verdict] = field(default_factory=list)

    @property
    def outcome(self) -> OutcomeConfig | None:
        """The suite's ordered outcome levels, when it declared them."""
        return self.manifest.suite.outcome if self.manifest.suite is not None else None

    @property
    def runs(self) -> int:
        """Repeats per scenario the suite asked for (at least the largest repeat index seen plus one)."""
        seen = max((c.repeat + 1 for c in self.conversations), default=1)
        asked = self.manifest.suite.runs if self.manifest.suite is not None else 1
        return max(asked, seen)

    def verdicts_by_conversation(self) -> dict[str, list[Verdict]]:
        """The chosen verdicts grouped by conversation id (computed once; do not modify the result)."""
        if "by_conversation" not in self.cache:
            grouped: dict[str, list[Verdict]] = {}
            for verdict in self.verdicts:
                grouped.setdefault(verdict.conversation_id, []).append(verdict)
            self.cache["by_conversation"] = grouped
        return dict(self.cache["by_conversation"])

    def scenario_tags(self) -> dict[str, list[str]]:
        """Tags of each scenario, from its conversations."""
        tags: dict[str, list[str]] = {}
        for record in self.conversations:
            tags.setdefault(record.scenario_id, list(record.tags))
        return tags


def _select_judge_set(all_verdicts: list[Verdict], wanted: str | None) -> tuple[str | None, list[str]]:
    """The chosen set (by --judge-set, else the one that wrote last) and all sets, most recent first."""
    last_position: dict[str, int] = {}
    for position, verdict in enumerate(all_verdicts):
        last_position[verdict.judge_set_hash] = position
    recent_first = sorted(last_position, key=lambda h: -last_position[h])
    if not recent_first:
        if wanted:
            raise UserError(f"--judge-set {wanted}: this run has no verdicts at all")
        return None, []
    if wanted is None:
        return recent_first[0], recent_first
    bare = wanted.split(":", 1)[-1]
    matches = [h for h in recent_first if h == wanted or h.split(":", 1)[-1].startswith(bare)]
    if len(matches) != 1:
        known = ", ".join(short_hash(h) for h in recent_first)
        what = "matches no" if not matches else "matches more than one"
        raise UserError(f"--judge-set {wanted} {what} judge set of this run; known sets: {known}")
    return matches[0], recent_first


def _chosen_verdicts(
    all_verdicts: list[Verdict], chosen: str | None, recent_first: list[str]
) -> tuple[list[Verdict], dict[str, str]]:
    """One verdict per (conversation, criterion) from the chosen set; criteria it never judged are taken
    from the most recent set that did (code checks are not always re-run by a re-judge), and named."""
    by_set: dict[str, dict[tuple[str, str], Verdict]] = {}
    for verdict in all_verdicts:
        by_set.setdefault(verdict.judge_set_hash, {})[(verdict.conversation_id, verdict.criterion_id)] = (
            verdict
        )
    if chosen is None:
        return [], {}
    picked = dict(by_set[chosen])
    have = {criterion for _, criterion in picked}
    borrowed: dict[str, str] = {}
    for judge_set in recent_first:
        for (conversation, criterion), verdict in by_set[judge_set].items():
            if criterion in have or borrowed.get(criterion, judge_set) != judge_set:
                continue
            borrowed[criterion] = judge_set
            picked[(conversation, criterion)] = verdict
    return list(picked.values()), borrowed


def _expected(manifest: Manifest, verdicts: list[Verdict]) -> dict[str, dict[str, Any]]:
    """Each scenario's `expected` block as the run recorded it: from the manifest, and for keys it lacks,
    from the outcome verdicts (which store what they compared)."""
    expected = {entry.id: dict(entry.expected) for entry in manifest.scenarios if entry.expected}
    for verdict in verdicts:
        if verdict.criterion_id.startswith("outcome.") and verdict.expected is not None:
            key = verdict.criterion_id.removeprefix("outcome.")
            expected.setdefault(verdict.scenario_id, {}).setdefault(key, verdict.expected)
    return expected


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while reading: a large run builds ~10^5 records that hold no
    cycles, and each generation-2 pass would rescan all of them (about half the load time at 10^4
    conversations). Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# Outcome keys compared with the stop reason, not with the bot's final state.
_STOP_OUTCOMES = ("handover", "closed", "stop_reason")


def never_set_warnings(conversations: list[ConversationRecord], verdicts: list[Verdict]) -> list[str]:
    """An expected key the bot set in none of the conversations judged on it: its fails are more likely a
    misspelt key (or a bot that does not report it) than wrong answers, and the report says so. The fails
    stay fails: a bot that never states its decision has not given one."""
    states = {r.id: r.final_state or {} for r in conversations}
    judged: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        key = verdict.criterion_id.removeprefix("outcome.")
        if verdict.criterion_id.startswith("outcome.") and key not in _STOP_OUTCOMES:
            judged.setdefault(key, []).append(verdict)
    warnings = []
    for key, of_key in sorted(judged.items()):
        ids = {v.conversation_id for v in of_key if v.conversation_id in states}
        if not ids or any(key in states[i] for i in ids) or not any(v.result == "fail" for v in of_key):
            continue
        seen = sorted({k for i in ids for k in states[i]})
        warnings.append(
            f"outcome.{key}: the bot never set {key} in any of the {len(ids)} conversations judged on it "
            f"(its final states hold {', '.join(seen) or 'nothing'}); its fails may be a misspelt expected "
            "key or a bot that does not report it: check the scenarios' expected and the bot's state"
        )
    return warnings


def _stray_warnings(path: Path, verdicts: list[Verdict], live: set[str]) -> list[str]:
    """Verdicts for conversations the run does not have are left out of every number, and said."""
    strays = sorted({v.conversation_id for v in verdicts if v.conversation_id not in live})
    if not strays:
        return []
    shown = ", ".join(strays[:5]) + (f" and {len(strays) - 5} more" if len(strays) > 5 else "")
    return [
        f"{path / 'verdicts.jsonl'} holds verdicts for {len(strays)} conversations this run does not have "
        f"({shown}); they are left out of every number"
    ]


def _verdict_sharing() -> Sharing:
    """Verdicts share their repeated strings and field sets as they are read (record/compact.py)."""
    return Sharing(
        (
            "conversation_id",
            "scenario_id",
            "criterion_id",
            "kind",
            "result",
            "judge_model",
            "judge_set_hash",
            "severity",
            "category",
            "decided_by",
        )
    )


def load_run(path: Path, judge_set: str | None = None, *, keep_turns: bool = True) -> RunData:
    """Open a run folder for reporting; raise UserError when it is not one or `judge_set` is unknown.

    `keep_turns=False` leaves each conversation's turns in the folder, re-read when used
    (`record/stored_turns.py`): for a report of a large run, which shows few conversations in full."""
    folder = RunFolder.open(path)
    manifest = folder.read_manifest()
    with _no_cyclic_gc():
        all_records = list(folder.conversations() if keep_turns else folder.conversations_stored())
        every = list(_verdict_sharing()(folder.verdicts()))
    all_verdicts = [v for v in every if not v.is_sample]
    attempts = Counter(record.id for record in all_records)
    latest = latest_by_id(all_records)
    fidelity = {(v.conversation_id, v.criterion_id): v for v in every if v.kind == "fidelity"}
    all_verdicts = [v for v in all_verdicts if v.kind != "fidelity"]
    chosen, recent_first = _select_judge_set(all_verdicts, judge_set)
    verdicts, borrowed = _chosen_verdicts(all_verdicts, chosen, recent_first)
    order = [entry.id for entry in manifest.scenarios]
    for record in latest.values():
        if record.scenario_id not in order:
            order.append(record.scenario_id)
    position = {scenario_id: index for index, scenario_id in enumerate(order)}
    conversations = sorted(latest.values(), key=lambda r: (position[r.scenario_id], r.repeat))
    live = set(latest)
    warnings = _stray_warnings(path, verdicts, live)
    verdicts = [v for v in verdicts if v.conversation_id in live]
    sets = []
    for judge_set_hash in recent_first:
        of_set = [v for v in all_verdicts if v.judge_set_hash == judge_set_hash]
        sets.append(
            JudgeSetInfo(
                hash=judge_set_hash,
                verdicts=len(of_set),
                criteria=sorted({v.criterion_id for v in of_set}),
                judge_models=sorted({v.judge_model for v in of_set if v.judge_model}),
                chosen=judge_set_hash == chosen,
            )
        )
    warnings += never_set_warnings(conversations, verdicts)
    expected = _expected(manifest, verdicts)
    if borrowed:
        named = ", ".join(f"{c} (from {short_hash(h)})" for c, h in sorted(borrowed.items()))
        warnings.append(
            f"judge set {short_hash(chosen)} did not judge some criteria; using earlier sets: {named}"
        )
    return RunData(
        path=path,
        manifest=manifest,
        conversations=conversations,
        attempts=attempts,
        verdicts=verdicts,
        judge_set=chosen,
        judge_sets=sets,
        borrowed=borrowed,
        expected=expected,
        scenario_order=order,
        warnings=warnings,
        samples=[
            v for v in every if v.is_sample and v.judge_set_hash == chosen and v.conversation_id in live
        ],
        fidelity=[v for v in fidelity.values() if v.conversation_id in live],
    )
