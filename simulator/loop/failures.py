"""A run's failures grouped by criterion and scenario group, with counts, bounds and the strongest evidence.

This is what `simulator propose` turns into change requests (docs/loop.md). A group is one criterion on
one group of scenarios: the variants of one base scenario, else the scenarios sharing the tag the criterion
applies to (or the failing scenario's first tag), else the scenario alone. Its failure rate counts
conversations, with the scenario-clustered interval beside it (repeats of a scenario are not independent);
errored and not-judged conversations are left out and counted. Evidence is ranked: quotes a judge gave that
were found in the transcript first, then the transcript's own passages (the bot's last question before its
advice, the advice), then unverified quotes; key facts the simulated user was never asked for are listed
with how many failing conversations missed them. An optional hazard log maps hazards to criteria, so each
group names the hazards it bears on.
"""

from __future__ import annotations

__all__ = ["FailureGroup", "group_failures", "load_hazards"]

import re
from collections import Counter
from pathlib import Path

from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.errors import UserError
from simulator.models import StrictModel as _Model
from simulator.record.models import ConversationRecord, Verdict
from simulator.stats.rates import RateView, rate_view

MAX_EVIDENCE = 6
_SOURCES = ("judge_verified", "transcript", "judge_unverified")


class EvidenceQuote(_Model):
    """One quoted passage and where it comes from; `verified` means it was found in the transcript."""

    conversation_id: str
    quote: str
    verified: bool
    source: str  # judge_verified, transcript (the bot's own words, read from the record), judge_unverified
    note: str = ""  # the judge's reasoning, or what the passage is (last question, advice)
    conversations: int = 1  # how many failing conversations gave the same quote


class MissedFact(_Model):
    """A key fact of a scenario that the bot never asked for, in `missed` of the `failed` conversations."""

    scenario_id: str
    text: str
    missed: int
    failed: int


class FailureGroup(_Model):
    """One criterion failing on one group of scenarios: what a proposal is written for."""

    id: str
    criterion_id: str
    criterion_text: str
    severity: str | None
    category: str | None
    group: str  # e.g. tag:cardiac, base:chest-pain, scenario:cough-14
    scenarios: list[str]
    failing_scenarios: list[str]
    failed: int
    judged: int
    left_out: int  # conversations of the group with an error or no verdict on this criterion
    rate: RateView
    failing_conversations: list[str]
    evidence: list[EvidenceQuote]
    missed_facts: list[MissedFact]
    last_questions: list[tuple[str, int]]  # the bot's last question before its advice, and how often
    outcomes: list[str]  # "expected emergency, recorded urgent (3)"
    hazards: list[str]
    tags: list[str]


def load_hazards(path: Path) -> dict[str, list[str]]:
    """A hazard log as hazard id -> criterion ids. Accepts `hazards: [{id, criteria: [...]}, ...]`, a list
    of such entries, or a mapping `H1: [criterion, ...]`; a malformed file names the entry and the fix."""
    from simulator.config.yamlfile import YAMLProblem, load_yaml

    try:
        data = load_yaml(path).data
    except YAMLProblem as exc:
        raise UserError(f"{path}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("hazards"), list):
        data = data["hazards"]
    if isinstance(data, dict):
        data = [{"id": key, "criteria": value} for key, value in data.items()]
    if not isinstance(data, list):
        raise UserError(f"{path}: a hazard log is a list of {{id, criteria: [criterion ids]}} entries")
    out: dict[str, list[str]] = {}
    for n, entry in enumerate(data, 1):
        criteria = entry.get("criteria") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not entry.get("id") or not isinstance(criteria, list):
            raise UserError(f"{path}: hazard {n} needs an `id` and `criteria: [criterion ids]`")
        out[str(entry["id"])] = [str(c) for c in criteria]
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "group"


def _group_of(run: RunData, scenario_id: str, applies_to: list[str]) -> str:
    entry = run.manifest.scenario(scenario_id)
    if entry is not None and entry.base:
        return f"base:{entry.base}"
    tags = entry.tags if entry is not None else run.scenario_tags().get(scenario_id, [])
    shared = [t for t in applies_to if t in tags]
    if shared:
        return f"tag:{shared[0]}"
    return f"tag:{tags[0]}" if tags else f"scenario:{scenario_id}"


def _members(run: RunData, group: str) -> list[str]:
    kind, _, value = group.partition(":")
    out = []
    for entry in run.manifest.scenarios:
        if (kind == "base" and entry.base == value) or (kind == "tag" and value in entry.tags):
            out.append(entry.id)
    return out or [value]


def _bot_lines(record: ConversationRecord) -> list[str]:
    return [m for turn in record.turns if turn.role == "bot" for m in turn.messages if m.strip()]


def last_question(record: ConversationRecord) -> tuple[str, str] | None:
    """The bot's last question before its last message (its advice), and that message; None if none."""
    lines = _bot_lines(record)
    if len(lines) < 2:
        return None
    questions = [m for m in lines[:-1] if m.rstrip().endswith("?")]
    return (questions[-1], lines[-1]) if questions else None


def _evidence(failing: list[Verdict], records: dict[str, ConversationRecord]) -> list[EvidenceQuote]:
    """Quotes ranked: verified judge quotes, the transcript's passages, unverified quotes; repeats merged."""
    found: dict[tuple[str, str], EvidenceQuote] = {}
    for verdict in failing:
        candidates = []
        for ev in verdict.evidence:
            source = (
                "judge_verified"
                if ev.found and verdict.evidence_verified is not False
                else "judge_unverified"
            )
            candidates.append((ev.quote, source, verdict.reasoning))
        passage = (
            last_question(records[verdict.conversation_id]) if verdict.conversation_id in records else None
        )
        if passage is not None:
            candidates.append((passage[0], "transcript", "the bot's last question before its advice"))
            candidates.append((passage[1], "transcript", "the bot's advice"))
        for quote, source, note in candidates:
            key = (source, quote.strip())
            if key in found:
                found[key].conversations += 1
                continue
            found[key] = EvidenceQuote(
                conversation_id=verdict.conversation_id,
                quote=quote.strip(),
                verified=source != "judge_unverified",
                source=source,
                note=note,
            )
    ranked = sorted(found.values(), key=lambda q: (_SOURCES.index(q.source), -q.conversations))
    return ranked[:MAX_EVIDENCE]


_WORD = re.compile(r"[a-z]{4,}")


def _said(fact: str, record: ConversationRecord) -> bool:
    """Whether the user's messages already carry most of the fact's words (told in the opening, say)."""
    words = set(_WORD.findall(fact.lower()))
    said = set(
        _WORD.findall(" ".join(m for t in record.turns if t.role == "user" for m in t.messages).lower())
    )
    return bool(words) and len(words & said) >= len(words) / 2


def _missed_facts(failing: list[Verdict], records: dict[str, ConversationRecord]) -> list[MissedFact]:
    """Key facts never asked for and never said in other words, in the failing conversations, by scenario."""
    missed: Counter[tuple[str, str]] = Counter()
    order: dict[tuple[str, str], int] = {}
    failed: Counter[str] = Counter()
    for verdict in failing:
        record = records.get(verdict.conversation_id)
        if record is None:
            continue
        failed[record.scenario_id] += 1
        for fact in record.provenance:
            if fact.key and fact.status == "missed" and not _said(fact.text, record):
                missed[(record.scenario_id, fact.text)] += 1
                order.setdefault((record.scenario_id, fact.text), fact.fact)
    return [
        MissedFact(scenario_id=s, text=t, missed=n, failed=failed[s])
        for (s, t), n in sorted(missed.items(), key=lambda item: (-item[1], item[0][0], order[item[0]]))
    ]


def _outcomes(failing: list[Verdict]) -> list[str]:
    counted = Counter(
        (str(v.expected), str(v.actual)) for v in failing if v.expected is not None or v.actual is not None
    )
    return [f"expected {e}, recorded {a} ({n})" for (e, a), n in counted.most_common()]


def group_failures(run: RunData, hazards: dict[str, list[str]] | None = None) -> list[FailureGroup]:
    """Every (criterion, scenario group) with at least one failure, most failures first."""
    records = {r.id: r for r in run.conversations}
    by_criterion: dict[str, list[Verdict]] = {}
    for verdict in run.verdicts:
        if verdict.kind != "metric":
            by_criterion.setdefault(verdict.criterion_id, []).append(verdict)
    groups = []
    for criterion_id, verdicts in sorted(by_criterion.items()):
        entry = run.manifest.criterion(criterion_id)
        applies_to = entry.applies_to if entry else []
        keys = {_group_of(run, v.scenario_id, applies_to) for v in verdicts if v.result == "fail"}
        for key in sorted(keys):
            groups.append(_one_group(run, criterion_id, key, verdicts, records, hazards or {}))
    groups.sort(key=lambda g: (-g.failed, g.criterion_id, g.group))
    return groups


def _one_group(
    run: RunData,
    criterion_id: str,
    key: str,
    verdicts: list[Verdict],
    records: dict[str, ConversationRecord],
    hazards: dict[str, list[str]],
) -> FailureGroup:
    members = _members(run, key)
    mine = [v for v in verdicts if v.scenario_id in members]
    decided = [v for v in mine if v.result in ("pass", "fail")]
    failing = [v for v in decided if v.result == "fail"]
    cells: dict[str, list[int]] = {}  # (failed, decided) per vignette: the unit of the rate
    for v in decided:
        cell = cells.setdefault(vignette_of(v.scenario_id), [0, 0])
        cell[0] += v.result == "fail"
        cell[1] += 1
    per_scenario = [(a, b) for a, b in cells.values()]
    entry = run.manifest.criterion(criterion_id)
    text = entry.criterion.strip() if entry else _code_criterion_text(criterion_id, failing)
    tags = sorted({t for s in members for t in (run.scenario_tags().get(s) or [])})
    questions = Counter(p[0] for v in failing if (p := last_question(records[v.conversation_id])) is not None)
    return FailureGroup(
        id=f"{_slug(criterion_id)}--{_slug(key)}",
        criterion_id=criterion_id,
        criterion_text=text,
        severity=failing[0].severity if failing else None,
        category=failing[0].category if failing else None,
        group=key,
        scenarios=members,
        failing_scenarios=sorted({v.scenario_id for v in failing}),
        failed=len(failing),
        judged=len(decided),
        left_out=len({r.id for r in records.values() if r.scenario_id in members}) - len(decided),
        rate=rate_view(len(failing), len(decided), per_scenario=per_scenario),
        failing_conversations=sorted(v.conversation_id for v in failing),
        evidence=_evidence(failing, records),
        missed_facts=_missed_facts(failing, records),
        last_questions=questions.most_common(),
        outcomes=_outcomes(failing),
        hazards=sorted(h for h, criteria in hazards.items() if criterion_id in criteria),
        tags=tags,
    )


def _code_criterion_text(criterion_id: str, failing: list[Verdict]) -> str:
    """Words for a code check, which has no rubric in the judge set."""
    if criterion_id.startswith("outcome."):
        return f"the bot records the expected {criterion_id.removeprefix('outcome.')} (checked in code)"
    return f"{criterion_id} (checked in code)" + (f": {failing[0].reasoning}" if failing else "")
