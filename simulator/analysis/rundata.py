"""One run, loaded for reporting: manifest, latest conversations, the verdicts that count (record/selection.py),
expectations, labels."""

from __future__ import annotations

__all__ = ["JudgeSetInfo", "RunData", "load_labels", "load_run", "short_hash"]

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.config.suite import OutcomeConfig
from simulator.models import ResultModel
from simulator.plural import plural
from simulator.record.compact import Sharing
from simulator.record.folder import (
    CONVERSATIONS,
    LABELS,
    MANIFEST,
    VERDICTS,
    RunFolder,
    latest_by_id,
    torn_tail,
)
from simulator.record.hashing import sha256_file, short_hash
from simulator.record.index import is_matrix, matrix_not_one_run
from simulator.record.manifest import Manifest
from simulator.record.models import ConversationRecord, Label, Verdict
from simulator.record.selection import select_verdicts


class JudgeSetInfo(ResultModel):
    """One judge set that judged this run: its hash, how many verdicts it wrote, its judge models."""

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
    # The run folder's labels (`labels.jsonl`: several labellers, every line in the order written; the last
    # line per labeller and item is that labeller's answer), read once with the run, and the file's hash.
    labels: list[Label] = field(default_factory=list)
    labels_sha256: str | None = None
    # Conversations without a scenario whose expected level a clinician labelled (conversation id -> level,
    # record/labelled_levels.py); already merged into `expected`, kept to say where a level came from.
    labelled_levels: dict[str, str] = field(default_factory=dict)
    # Evidence the run lacks (`incomplete_records`): planned conversations not recorded, by scenario id, and
    # the recorded conversations with no verdict row of a kind the run wrote for the others.
    unrecorded: dict[str, int] = field(default_factory=dict)
    unverdicted: set[str] = field(default_factory=set)
    # The warnings of those gaps (a torn last line, conversations without verdicts), also in `warnings`.
    gaps: list[str] = field(default_factory=list)

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

    def incomplete(self) -> str | None:
        """What an incomplete run lacks, in words (`run status interrupted: 64 of 66 planned conversations
        recorded`), or None for a run that holds every conversation it planned."""
        planned, recorded = self.manifest.planned, len(self.conversations)
        if self.manifest.status == "complete" and recorded >= planned:
            return None
        return (
            f"{self.path}: run status {self.manifest.status}: {recorded} of {planned} planned conversations "
            "recorded; finish it with simulator run --resume"
        )

    def evidence_gaps(self) -> list[str]:
        """Everything the run's records lack, said with the fix: an incomplete run, a torn last line,
        conversations without verdicts. What `gate` and `safety-case` print before deciding."""
        incomplete = self.incomplete()
        return ([incomplete] if incomplete else []) + self.gaps

    def scenario_tags(self) -> dict[str, list[str]]:
        """Tags of each scenario, from its conversations."""
        tags: dict[str, list[str]] = {}
        for record in self.conversations:
            tags.setdefault(record.scenario_id, list(record.tags))
        return tags


def _expected(manifest: Manifest, verdicts: list[Verdict]) -> dict[str, dict[str, Any]]:
    """Each scenario's `expected` block as the run recorded it: from the manifest, and for keys it lacks,
    from the outcome verdicts (which store what they compared)."""
    expected = {entry.id: dict(entry.expected) for entry in manifest.scenarios if entry.expected}
    for verdict in verdicts:
        if verdict.criterion_id.startswith("outcome.") and verdict.expected is not None:
            key = verdict.criterion_id.removeprefix("outcome.")
            expected.setdefault(verdict.scenario_id, {}).setdefault(key, verdict.expected)
    return expected


def _labelled(
    manifest: Manifest,
    conversations: list[ConversationRecord],
    labels: list[Label],
    expected: dict[str, dict[str, Any]],
    warnings: list[str],
) -> dict[str, str]:
    """Clinician-labelled expected levels of an imported or collected run, merged into `expected` over the
    trace's own (a clinician who read the conversation outranks it); labellers who disagree are a warning
    and leave that conversation's level as it was."""
    outcome = manifest.suite.outcome if manifest.suite is not None else None
    if manifest.kind != "imported" or outcome is None or not labels:
        return {}
    from simulator.record.labelled_levels import labelled_levels

    found = labelled_levels(labels, f"outcome.{outcome.key}")
    kept: dict[str, str] = {}
    for record in conversations:
        level = found.levels.get(record.id)
        if level is not None:
            expected.setdefault(record.scenario_id, {})[outcome.key] = level
            kept[record.id] = level
    if found.disputed:
        named = ", ".join(f"{c} ({' / '.join(v)})" for c, v in sorted(found.disputed.items())[:5])
        warnings.append(
            f"clinicians labelled different expected levels for {plural(len(found.disputed), 'conversation')} ({named}); "
            "they keep no clinician-labelled level until the labels agree"
        )
    return kept


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
        if any(v.outcome is not None and set(v.outcome.readings) != {"state"} for v in of_key):
            continue  # read from other sources too (docs/outcome-sources.md): a bot without state is expected
        seen = sorted({k for i in ids for k in states[i]})
        warnings.append(
            f"outcome.{key}: the bot never set {key} in any of the {plural(len(ids), 'conversation')} judged on it "
            f"(its final states hold {', '.join(seen) or 'nothing'}); its fails may be a misspelt expected "
            "key or a bot that does not report it: check the scenarios' expected and the bot's state"
        )
    return warnings


def _stray_warnings(path: Path, strays: list[str]) -> list[str]:
    """Verdicts for conversations the run does not have are left out of every number, and said."""
    if not strays:
        return []
    shown = ", ".join(strays[:5]) + (f" and {len(strays) - 5} more" if len(strays) > 5 else "")
    return [
        f"{path / 'verdicts.jsonl'} holds verdicts for {plural(len(strays), 'conversation')} this run does not have "
        f"({shown}); they are left out of every number"
    ]


def _unrecorded(manifest: Manifest, conversations: list[ConversationRecord]) -> dict[str, int]:
    """Planned conversations not recorded, by scenario (each planned `suite.runs` times), when the run holds
    fewer than it planned; a shard plans a part of its scenarios, so then each scenario short is counted."""
    if manifest.planned <= len(conversations) or manifest.suite is None:
        return {}
    recorded = Counter(r.scenario_id for r in conversations)
    short = {e.id: manifest.suite.runs - recorded[e.id] for e in manifest.scenarios}
    return {scenario: n for scenario, n in short.items() if n > 0}


def _kinds_due(manifest: Manifest, judge_set: str | None, record: ConversationRecord) -> set[str]:
    """The verdict kinds the judging stage writes for this conversation: `llm` when a criterion of the judge
    set applies to its tags, `code` when its scenario expects the suite's outcome (judging/stage.py)."""
    due = set()
    chosen = next((s for s in manifest.judge_sets if s.hash == judge_set), None)
    if chosen is not None and any(
        not c.applies_to or set(c.applies_to) & set(record.tags) for c in chosen.criteria
    ):
        due.add("llm")
    outcome = manifest.suite.outcome if manifest.suite is not None else None
    entry = next((e for e in manifest.scenarios if e.id == record.scenario_id), None)
    if outcome is not None and entry is not None and outcome.key in entry.expected:
        due.add("code")
    return due


def _unverdicted(
    manifest: Manifest,
    judge_set: str | None,
    conversations: list[ConversationRecord],
    verdicts: list[Verdict],
) -> dict[str, list[str]]:
    """Kind -> the conversations with no verdict row of that kind, though the run wrote that kind for others
    and it applies to them: their evidence was lost (a cut file) or never written (judging stopped)."""
    if manifest.status == "running" or manifest.kind != "simulation":
        return {}
    have: dict[str, set[str]] = {}
    for verdict in verdicts:
        have.setdefault(verdict.kind, set()).add(verdict.conversation_id)
    lacking: dict[str, list[str]] = {}
    for record in conversations:
        for kind in sorted(_kinds_due(manifest, judge_set, record) & set(have)):
            if record.id not in have[kind]:
                lacking.setdefault(kind, []).append(record.id)
    return lacking


def _record_warnings(path: Path, status: str, lacking: dict[str, list[str]], total: int) -> list[str]:
    """A torn last line of a records file, and conversations without verdicts of a kind, said with the fix."""
    warnings = []
    for name in (CONVERSATIONS, VERDICTS):
        torn = torn_tail(path / name)
        if torn and status != "running":
            warnings.append(
                f"{path / name} ends in a torn line ({torn} bytes without a newline), left out of every number: "
                "a crash mid-write (or a damaged copy); simulator run --resume RUN repairs it and redoes "
                "what it held"
            )
    ids = sorted({i for of_kind in lacking.values() for i in of_kind})
    if ids:
        kinds = " or ".join(sorted(lacking))
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        warnings.append(
            f"{path / VERDICTS} holds no {kinds} verdict for {len(ids)} of {plural(total, 'conversation')} ({shown}) "
            "though the run wrote them for the others: they count as nothing judged; the file lost lines or "
            "judging stopped: simulator run --resume RUN judges them"
        )
    return warnings


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


def load_labels(path: Path) -> tuple[list[Label], str | None]:
    """The run folder's labels (`labels.jsonl`, every line in the order written) and the hash of that file;
    ([], None) when nobody has labelled the run yet."""
    file = path / LABELS
    if not file.is_file():
        return [], None
    return list(RunFolder.open(path).labels()), sha256_file(file)


def load_run(path: Path, judge_set: str | None = None, *, keep_turns: bool = True) -> RunData:
    """Open a run folder for reporting; raise UserError when it is not one or `judge_set` is unknown.

    `keep_turns=False` leaves each conversation's turns in the folder, re-read when used
    (`record/stored_turns.py`): for a report of a large run, which shows few conversations in full."""
    if is_matrix(path) and not (path / MANIFEST).exists():
        raise matrix_not_one_run(path)
    folder = RunFolder.open(path)
    manifest = folder.read_manifest()
    with _no_cyclic_gc():
        all_records = list(folder.conversations() if keep_turns else folder.conversations_stored())
        latest = latest_by_id(all_records)
        selection = select_verdicts(_verdict_sharing()(folder.verdicts()), judge_set, conversations=latest)
    attempts = Counter(record.id for record in all_records)
    chosen, verdicts = selection.judge_set, selection.verdicts
    order = [entry.id for entry in manifest.scenarios]
    for record in latest.values():
        if record.scenario_id not in order:
            order.append(record.scenario_id)
    position = {scenario_id: index for index, scenario_id in enumerate(order)}
    conversations = sorted(latest.values(), key=lambda r: (position[r.scenario_id], r.repeat))
    warnings = _stray_warnings(path, selection.strays)
    sets = [
        JudgeSetInfo(
            hash=judge_set_hash,
            verdicts=len(of_set),
            criteria=sorted({v.criterion_id for v in of_set}),
            judge_models=sorted({v.judge_model for v in of_set if v.judge_model}),
            chosen=judge_set_hash == chosen,
        )
        for judge_set_hash, of_set in selection.by_set.items()
    ]
    warnings += never_set_warnings(conversations, verdicts)
    expected = _expected(manifest, verdicts)
    if selection.borrowed:
        named = ", ".join(f"{c} (from {short_hash(h)})" for c, h in sorted(selection.borrowed.items()))
        warnings.append(
            f"judge set {short_hash(chosen)} did not judge some criteria; using earlier sets: {named}"
        )
    lacking = _unverdicted(manifest, chosen, conversations, [*verdicts, *selection.fidelity])
    gaps = _record_warnings(path, manifest.status, lacking, len(conversations))
    warnings += gaps
    labels, labels_sha256 = load_labels(path)
    labelled = _labelled(manifest, conversations, labels, expected, warnings)
    return RunData(
        path=path,
        manifest=manifest,
        conversations=conversations,
        attempts=attempts,
        verdicts=verdicts,
        judge_set=chosen,
        judge_sets=sets,
        borrowed=selection.borrowed,
        expected=expected,
        scenario_order=order,
        warnings=warnings,
        samples=selection.samples,
        fidelity=selection.fidelity,
        labels=labels,
        labels_sha256=labels_sha256,
        labelled_levels=labelled,
        unrecorded=_unrecorded(manifest, conversations),
        unverdicted={i for ids in lacking.values() for i in ids},
        gaps=gaps,
    )
