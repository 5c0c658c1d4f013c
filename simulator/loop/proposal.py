"""A proposed change to the bot under test, as `simulator propose` writes it and a reviewer edits it.

One YAML file per proposal (`proposals/<run-id>/<id>.yaml`, a Markdown twin beside it for reading). For a
`chat` bot the change is a list of edits of its system prompt (`find` an exact passage, `replace` it);
for any other bot it is a change request in the bot's own terms (the missing question and where in the
flow it goes, or a guardrail's condition). Each proposal keeps the evidence it rests on and the criteria
the change might put at risk. A proposal whose model output was malformed has `status: error`, the
problem in `error` and no change: `simulator try` refuses it, so it is never applied.
"""

from __future__ import annotations

__all__ = [
    "Change",
    "EvidenceItem",
    "PromptEdit",
    "Proposal",
    "RiskItem",
    "apply_edits",
    "check_edits",
    "load_proposal",
    "prompt_diff",
    "proposal_yaml",
]

import difflib
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from simulator.errors import Problem, UserError, field_path, pattern_or_message
from simulator.models import StrictModel as _Strict
from simulator.models import empty_dict, empty_list

PROPOSAL_SCHEMA_VERSION = 1
ChangeKind = Literal["prompt_edit", "tool_description", "missing_question", "guardrail", "other"]


class PromptEdit(_Strict):
    """Replace the one passage of the prompt that equals `find` by `replace` (an empty `find` appends)."""

    find: str
    replace: str


class EvidenceItem(_Strict):
    """A passage the change rests on; `verified` when it was found in the run's transcript."""

    conversation_id: str
    quote: str
    verified: bool
    source: str = ""
    note: str = ""


class RiskItem(_Strict):
    """A criterion the change might make worse, and why."""

    criterion: str
    why: str = ""


class Change(_Strict):
    """The concrete change: `edits` for a chat bot's prompt; `question` / `where` / `condition` otherwise."""

    kind: ChangeKind
    summary: str
    where: str = ""
    question: str = ""
    condition: str = ""
    edits: list[PromptEdit] = Field(default_factory=empty_list)
    rationale: str = ""


class Proposal(_Strict):
    """Everything a reviewer needs to accept, edit or reject one change, and `try` needs to apply it."""

    schema_version: int = PROPOSAL_SCHEMA_VERSION
    id: str
    status: Literal["proposed", "error"] = "proposed"
    created_at: datetime
    author: str  # offline-template, or model:<provider:model>
    run: str  # the run folder read
    run_id: str
    read: dict[str, str] = Field(
        default_factory=empty_dict
    )  # file -> sha256 of what the proposal was built from
    suite_file: str | None = None
    bot: str  # the bot as the run describes it (chat:..., python:..., http:...)
    bot_type: str
    prompt_file: str | None = None  # a chat bot's system prompt file, as resolved when proposing
    prompt_sha256: str | None = None
    tool_description: str | None = None  # a chat bot's decision tool description, as it was when proposing
    criterion_id: str
    criterion_text: str
    severity: str | None = None
    group: str
    hazards: list[str] = Field(default_factory=empty_list)
    scenarios: list[str]
    failing_scenarios: list[str]
    failures: str  # "3/6 conversations failed (...)", with the clustered interval
    evidence: list[EvidenceItem] = Field(default_factory=empty_list)
    missing_facts: list[str] = Field(default_factory=empty_list)
    change: Change | None = None
    at_risk: list[RiskItem] = Field(default_factory=empty_list)
    error: str | None = None
    raw_output: str | None = None  # the model's answer, kept when it could not be used


def check_edits(prompt: str, edits: list[PromptEdit], what: str = "the prompt") -> list[str]:
    """What stops the edits applying to `prompt` (`what` names it): a `find` that is absent or not unique;
    [] when fine."""
    problems = []
    for n, edit in enumerate(edits, 1):
        if not edit.find:
            continue
        count = prompt.count(edit.find)
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            problems.append(f"edit {n}: the text to find {where} in {what}: {edit.find[:80]!r}")
    if not edits:
        problems.append(f"the change has no edits of {what}")
    return problems


def apply_edits(prompt: str, edits: list[PromptEdit], what: str = "the prompt") -> str:
    """The text with every edit applied in order; raises UserError naming the edit that cannot apply."""
    problems = check_edits(prompt, edits, what)
    if problems:
        raise UserError(f"the change of {what} cannot be applied: " + "; ".join(problems))
    for edit in edits:
        if edit.find:
            prompt = prompt.replace(edit.find, edit.replace, 1)
        else:
            prompt = prompt.rstrip("\n") + "\n" + edit.replace.rstrip("\n") + "\n"
    return prompt


def prompt_diff(before: str, after: str, name: str = "prompt") -> str:
    """A unified diff of the prompt, for the reviewer."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(lines)


def proposal_yaml(proposal: Proposal) -> str:
    """The proposal as the YAML a reviewer reads and edits (block scalars for long text)."""
    data = proposal.model_dump(mode="json", exclude_none=True)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def load_proposal(path: Path) -> Proposal:
    """Read a proposal file; a malformed one is a UserError naming the field and the fix."""
    from simulator.config.yamlfile import YAMLProblem, load_yaml

    try:
        data = load_yaml(path).data
    except YAMLProblem as exc:
        raise UserError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise UserError(f"{path}: cannot read the proposal ({exc})") from exc
    try:
        return Proposal.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(str(path), pattern_or_message(e), field=field_path(e["loc"]) or None)
            for e in exc.errors()[:8]
        ]
        raise UserError(
            f"{path}: not a valid proposal file (simulator propose writes them)", problems
        ) from exc
