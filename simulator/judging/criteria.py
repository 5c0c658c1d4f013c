"""Criteria as data: one rule per judge, in the service owner's words, loaded and validated from YAML."""

from __future__ import annotations

__all__ = ["AggregateRule", "Criterion", "Severity", "criterion_files", "load_criteria"]

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from simulator.config.documents import FileDocument, FileDocumentKind, collect_documents, yaml_files
from simulator.errors import Problem, UserError
from simulator.judging.applicability import AppliesWhen
from simulator.models import empty_list

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Severity = Literal["critical", "major", "minor"]
# How several judgements of one item (samples, jury members) become the verdict that counts.
AggregateRule = Literal["majority", "any_fail", "unanimous_pass"]
DEFAULT_MET = "the conversation shows the behaviour described."
DEFAULT_NOT_MET = "the conversation does not show it."
DEFAULT_NOT_APPLICABLE = "The conversation gives this criterion nothing to judge."
# Ids the code checks write; a criterion may not take them, or its verdicts would mix with theirs.
RESERVED_PREFIXES = ("outcome.", "metric.", "assertions", "environment.", "tool_called.", "tool_not_called.")


class Criterion(FileDocument):
    """One judge's rubric: the rule, what pass / fail / not_applicable mean, where it applies, how much it matters."""

    model_config = ConfigDict(populate_by_name=True)

    id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"^[\w.-]+$")]
    # The rule in the service owner's words.
    criterion: Text
    # With `points` these say what met / not met mean, and may be left out.
    pass_: Text = Field(alias="pass", description="what a pass means")
    fail: Text = Field(description="what a fail means")
    not_applicable: Text = Field(
        default=DEFAULT_NOT_APPLICABLE, description="when the criterion does not apply to a conversation"
    )
    # Scenario tags the criterion applies to; empty means every scenario.
    applies_to: list[Text] = Field(default_factory=empty_list)
    severity: Severity = "major"
    # A free label; `omission` feeds the errors-of-omission rate, others (safety, tone, ...) group reports.
    category: Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[a-z][a-z0-9_-]*$")] = (
        "general"
    )
    notes: str | None = None
    # Conditions checked in code before the judge is asked (tags, expected outcome, stop reason, facts).
    applies_when: AppliesWhen | None = None
    # Signed rubric points (HealthBench): the criterion describes a behaviour; when it is met, `points`
    # are earned (negative: subtracted). The judge is asked whether it is met, not whether it is good.
    points: int | None = Field(default=None, ge=-10, le=10)
    # The jury's rule for this criterion; default from the suite's `judges.aggregate` by severity.
    aggregate: AggregateRule | None = None

    @field_validator("points")
    @classmethod
    def _points_not_zero(cls, value: int | None) -> int | None:
        if value == 0:
            raise ValueError("points must be between -10 and 10 and not 0 (leave it out for pass/fail)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _met_defaults(cls, data: Any) -> Any:
        """A rubric item with points may leave out pass / fail: they default to met / not met."""
        if isinstance(data, dict) and data.get("points") not in (None, 0):
            data = {"pass": DEFAULT_MET, "fail": DEFAULT_NOT_MET, **data}
        return data

    @property
    def met_result(self) -> str:
        """The verdict result when a points criterion is met: pass for positive points, fail for negative."""
        return "fail" if (self.points or 0) < 0 else "pass"

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith(RESERVED_PREFIXES):
            raise ValueError(f"ids starting with {', '.join(RESERVED_PREFIXES)} are reserved for code checks")
        return value

    def applies(self, tags: list[str]) -> bool:
        """True when the criterion applies to a scenario with these tags (no `applies_to` = all)."""
        return not self.applies_to or bool(set(self.applies_to) & set(tags))

    def canonical(self) -> str:
        """The rubric as canonical JSON: what the judge set's hash covers (not the file's layout or notes)."""
        unset = {name for name in ("applies_when", "points", "aggregate") if getattr(self, name) is None}
        data = self.model_dump(by_alias=True, exclude={"notes", *unset})
        return json.dumps(data, sort_keys=True, ensure_ascii=False)


def criterion_files(paths: list[Path]) -> list[Path]:
    """All YAML files under the given files and folders, recursively."""
    return yaml_files([Path(os.path.normpath(p)) for p in paths], what="judges")


CRITERION_DOCUMENTS = FileDocumentKind(
    model=Criterion,
    noun="criterion",
    list_key="criteria",
    marker_key="criterion",
    shape="id, criterion, pass, fail, ...",
    error_title="invalid judge files",
)


def _other_kinds(files: list[Path]) -> dict[Path, str]:
    """The files among criteria that hold something else (a suite, scenarios, a vocabulary), by their
    content as everywhere (config/kinds.py); a file whose keys say nothing is a criterion to be checked."""
    from simulator.config.kinds import document_kind
    from simulator.config.yamlfile import YAMLProblem, load_yaml

    found = {}
    for file in files:
        try:
            kind = document_kind(load_yaml(file).data, default="criterion")
        except YAMLProblem:
            continue  # reported by the loader
        if kind != "criterion":
            found[file] = kind
    return found


def not_criteria(path: Path) -> str | None:
    """What a judges path holds besides criteria, in words (`the suite file suite.yaml and 22 scenario
    files`), or None (a path that does not exist is reported where it is read)."""
    from simulator.readers import missing

    if missing(path):
        return None
    by_kind: dict[str, list[Path]] = {}
    for file, kind in _other_kinds(criterion_files([path])).items():
        by_kind.setdefault(kind, []).append(file)
    said = [
        f"the {kind} file {files[0].name}" if len(files) == 1 else f"{len(files)} {kind} files"
        for kind, files in sorted(by_kind.items(), key=lambda item: item[0] != "suite")
    ]
    return " and ".join(said) or None


def load_criteria(paths: list[Path]) -> list[Criterion]:
    """Load and validate every criterion; raise one UserError listing every problem in every file. A file
    that holds something else (a scenario, a suite) is one problem, not one per missing criterion field."""
    files = criterion_files(paths)
    others = _other_kinds(files)
    criteria, problems = collect_documents([f for f in files if f not in others], [CRITERION_DOCUMENTS])
    problems[:0] = [
        Problem(str(file), f"a {kind} file, not a criterion; keep criteria in a folder of their own", 1)
        for file, kind in others.items()
    ]
    if problems:
        raise UserError(CRITERION_DOCUMENTS.error_title, problems)
    return criteria
