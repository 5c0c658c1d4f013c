"""Clinicians are the gate: drafts wait in a review queue folder until someone accepts, edits or rejects
each, with their name and a reason; only an accepted draft becomes a scenario file of the suite.

The queue is a folder of draft YAML files; every decision is appended to its `decisions.jsonl` (who, when,
what, why), an accepted draft is validated (with the suite's own checks: outcome levels, distinctness),
written into the suite's scenario folder as `<id>.yaml` without `draft: true` and with its reviewer in
`notes`, and a rejected one moves to `rejected/` beside the reason.
"""

from __future__ import annotations

__all__ = [
    "Decision",
    "accept_draft",
    "accept_drafts",
    "decisions",
    "pending_drafts",
    "reject_draft",
    "reject_drafts",
]

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import yaml

from simulator.authoring.distinct import NEAR_DUPLICATE, nearest
from simulator.config.documents import load_documents
from simulator.config.scenario import SCENARIO_DOCUMENTS, Scenario
from simulator.config.yamlfile import YAMLProblem, parse_yaml, read_text_file
from simulator.errors import Problem, UserError
from simulator.jsonbounds import loads_bounded
from simulator.models import ResultModel
from simulator.readers import missing, text_lines

DECISIONS = "decisions.jsonl"


class Decision(ResultModel):
    """One reviewer's decision on one draft."""

    draft: str
    decision: Literal["accepted", "rejected"]
    reviewer: str
    reason: str
    at: str
    written: str | None = None  # the scenario file an accepted draft became
    edited: bool = False


def pending_drafts(queue: Path) -> list[Path]:
    """The draft files waiting in the queue, by name."""
    return sorted(p for p in queue.glob("*.yaml") if p.is_file()) if queue.is_dir() else []


def decisions(queue: Path) -> list[Decision]:
    """Every decision recorded in the queue, oldest first."""
    path = queue / DECISIONS
    if missing(path):
        return []
    found = []
    for number, line in text_lines(path):
        try:
            found.append(Decision.model_validate(loads_bounded(line, "the line")))
        except ValueError:  # JSONRefused and pydantic's ValidationError alike
            raise UserError(
                f"{path}:{number}: not a decision this queue wrote; the file was edited or damaged: "
                "restore it from version control"
            ) from None
    return found


def _who(reviewer: str, reason: str) -> tuple[str, str]:
    reviewer, reason = " ".join(reviewer.split()), " ".join(reason.split())
    if not reviewer:
        raise UserError("a decision needs the reviewer's name (--reviewer)")
    if not reason:
        raise UserError("a decision needs a reason (--reason): what a later reader should know")
    return reviewer, reason


def _draft_file(queue: Path, draft_id: str) -> Path:
    # An id names a file directly in the queue: `../scenarios/x` would accept (and then remove) a file
    # that is no draft, from anywhere the path reaches.
    if not draft_id or draft_id.startswith(".") or Path(draft_id).name != draft_id or "\\" in draft_id:
        raise UserError(
            f"'{draft_id}': not a draft id; a draft id is a file name in the review queue {queue}, without "
            "folders or a leading dot: the name of a waiting draft file without its .yaml"
        )
    path = queue / f"{draft_id}.yaml"
    if not path.is_file():
        waiting = ", ".join(p.stem for p in pending_drafts(queue)[:8]) or "none"
        raise UserError(f"no draft '{draft_id}' in the review queue {queue}; waiting: {waiting}")
    return path


def _record(queue: Path, decision: Decision) -> None:
    with (queue / DECISIONS).open("a", encoding="utf-8") as out:
        out.write(decision.model_dump_json() + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def accept_draft(
    queue: Path,
    draft_id: str,
    into: Path,
    reviewer: str,
    reason: str,
    suite: object | None = None,
    text: str | None = None,
    threshold: float = NEAR_DUPLICATE,
    others: list[Scenario] | None = None,
) -> Path:
    """Accept a draft (as edited, when `text` is given) into the scenario folder `into`: validated, checked
    against the suite (outcome levels) and for near-duplicates of the folder's vignettes, written without
    `draft: true`, the decision recorded. Any problem is one UserError and nothing is written.

    `others`: the folder's vignettes, when a caller deciding several drafts loaded them once
    (`accept_drafts`); the accepted draft joins them, so the next draft is compared with it too."""
    reviewer, reason = _who(reviewer, reason)
    source = _draft_file(queue, draft_id)
    try:  # the one bounded YAML reader: aliases, depth, size, duplicate keys (the desk sends `text`)
        original = read_text_file(source)
        data = parse_yaml(text if text is not None else original, source).data
    except YAMLProblem as exc:
        raise UserError(str(exc.problem)) from None
    if not isinstance(data, dict):
        raise UserError(f"{source}: a draft is one scenario mapping (id, persona, goal, facts, ...)")
    if text is None:  # its mistakes named at their lines in the reviewer's file, not in the staged copy
        load_documents([source], SCENARIO_DOCUMENTS)
    data.pop("draft", None)
    note = f"accepted by {reviewer} on {_now()[:10]}: {reason}"
    data["notes"] = f"{data.get('notes', '')}\n{note}".strip()
    target = into / f"{data.get('id', draft_id)}.yaml"
    if target.exists():
        raise UserError(f"{target} already exists; the draft's id is taken in {into}: edit its id")
    into.mkdir(parents=True, exist_ok=True)
    staged = into / f".{target.name}.staged"
    staged.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8")
    try:
        scenario: Scenario = load_documents([staged], SCENARIO_DOCUMENTS)[0]
        problems = _suite_problems(suite, scenario, staged)
        close = nearest(scenario, _folder_scenarios(into) if others is None else others)
        if close is not None and close[1] >= threshold:
            problems.append(
                Problem(str(source), f"a near-duplicate of {close[0].id} ({close[0].source}): facts overlap "
                        f"{close[1]:.2f} >= {threshold:.2f}; make it a different presentation or reject it")
            )  # fmt: skip
        if problems:
            raise UserError(f"draft {draft_id} cannot be accepted", problems)
        staged.replace(target)
    finally:
        staged.unlink(missing_ok=True)
    source.unlink()
    _record(queue, Decision(draft=draft_id, decision="accepted", reviewer=reviewer, reason=reason, at=_now(),
                            written=str(target), edited=text is not None and text != original))  # fmt: skip
    if others is not None:
        scenario._source = str(target)  # it was read from the staged file, now renamed
        others.append(scenario)
    return target


def accept_drafts(
    queue: Path,
    draft_ids: list[str],
    into: Path,
    reviewer: str,
    reason: str,
    suite: object | None = None,
    threshold: float = NEAR_DUPLICATE,
    done: Callable[[str, Path], None] | None = None,
) -> list[Path]:
    """Accept several drafts, in order, with one reviewer and reason: each decided as `accept_draft` decides
    one, against the folder's vignettes read once (and the drafts this call accepted before it). `done` hears
    of each accepted draft as it is written; a refused one stops none of the others (see `_each`)."""
    reviewer, reason = _who(reviewer, reason)
    others = _folder_scenarios(into)
    return _each(
        queue,
        draft_ids,
        "accepted",
        lambda draft_id: accept_draft(
            queue, draft_id, into, reviewer, reason, suite, None, threshold, others
        ),
        done,
    )


def reject_drafts(
    queue: Path,
    draft_ids: list[str],
    reviewer: str,
    reason: str,
    done: Callable[[str, Path], None] | None = None,
) -> list[Path]:
    """Reject several drafts, in order, with one reviewer and reason, as `reject_draft` rejects one."""
    reviewer, reason = _who(reviewer, reason)
    return _each(
        queue, draft_ids, "rejected", lambda draft_id: reject_draft(queue, draft_id, reviewer, reason), done
    )


def _each(
    queue: Path,
    draft_ids: list[str],
    verb: str,
    decide: Callable[[str], Path],
    done: Callable[[str, Path], None] | None,
) -> list[Path]:
    """Decide each draft in turn. One draft: its own UserError, word for word. Several: a refused draft (or
    one given twice, or not in the queue) stops none of the others, so nothing decided is lost; then one
    UserError lists every refused draft's problems, each line naming that draft's file in the queue."""
    if len(draft_ids) == 1:
        decided = [decide(draft_ids[0])]
        if done is not None:
            done(draft_ids[0], decided[0])
        return decided
    decided, refused, seen = [], [], set[str]()
    for draft_id in draft_ids:
        try:
            if draft_id in seen:
                raise UserError("given more than once; each draft is decided once, the first time")
            seen.add(draft_id)
            path = decide(draft_id)
        except UserError as exc:
            refused += _refusal(queue / f"{draft_id}.yaml", exc)
            continue
        decided.append(path)
        if done is not None:
            done(draft_id, path)
    if refused:
        failed = len(draft_ids) - len(decided)
        raise UserError(f"{failed} of {len(draft_ids)} drafts not {verb}, {len(decided)} {verb}", refused)
    return decided


def _refusal(draft: Path, exc: UserError) -> list[Problem]:
    """A refused draft's problems, each naming the draft (its file in the queue) first."""
    file = str(draft)
    if not exc.problems:
        return [Problem(file, str(exc).removeprefix(f"{file}: "))]
    return [p if p.file == file else Problem(file, str(p)) for p in exc.problems]


def _suite_problems(suite: object | None, scenario: Scenario, staged: Path) -> list[Problem]:
    if suite is None:
        return []
    from simulator.api.checks import expected_problems

    found = expected_problems(suite, [scenario])  # type: ignore[arg-type]
    return [Problem(p.file.replace(f".{scenario.id}.yaml.staged", f"{scenario.id}.yaml"), p.message, p.line, p.field)
            for p in found]  # fmt: skip


def _folder_scenarios(folder: Path) -> list[Scenario]:
    from simulator.config.loading import load_scenarios

    try:
        return load_scenarios([folder])  # a staged file (`.x.yaml.staged`) is not a scenario file
    except UserError:
        return []


def reject_draft(queue: Path, draft_id: str, reviewer: str, reason: str) -> Path:
    """Reject a draft: it moves to `rejected/` in the queue, the decision recorded with its reason."""
    reviewer, reason = _who(reviewer, reason)
    source = _draft_file(queue, draft_id)
    (queue / "rejected").mkdir(exist_ok=True)
    target = queue / "rejected" / source.name
    source.replace(target)
    _record(queue, Decision(draft=draft_id, decision="rejected", reviewer=reviewer, reason=reason, at=_now()))
    return target
