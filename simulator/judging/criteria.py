"""Criteria as data: one rule per judge, in the service owner's words, loaded and validated from YAML."""

from __future__ import annotations

__all__ = ["Criterion", "Severity", "criterion_files", "load_criteria"]

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, field_validator

from simulator.errors import Problem, UserError
from simulator.yamlfile import LocatedYAML, YAMLProblem, load_yaml, validate_model

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Severity = Literal["critical", "major", "minor"]
DEFAULT_NOT_APPLICABLE = "The conversation gives this criterion nothing to judge."
# Ids the code checks write; a criterion may not take them, or its verdicts would mix with theirs.
RESERVED_PREFIXES = ("outcome.", "metric.", "assertions")


class Criterion(BaseModel):
    """One judge's rubric: the rule, what pass / fail / not_applicable mean, where it applies, how much it matters."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"^[\w.-]+$")]
    # The rule in the service owner's words.
    criterion: Text
    pass_: Text = Field(alias="pass", description="what a pass means")
    fail: Text = Field(description="what a fail means")
    not_applicable: Text = Field(
        default=DEFAULT_NOT_APPLICABLE, description="when the criterion does not apply to a conversation"
    )
    # Scenario tags the criterion applies to; empty means every scenario.
    applies_to: list[Text] = Field(default_factory=list)
    severity: Severity = "major"
    # A free label; `omission` feeds the errors-of-omission rate, others (safety, tone, ...) group reports.
    category: Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[a-z][a-z0-9_-]*$")] = (
        "general"
    )
    notes: str | None = None

    _source: str = PrivateAttr(default="")
    _line: int | None = PrivateAttr(default=None)

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.startswith(RESERVED_PREFIXES):
            raise ValueError(f"ids starting with {', '.join(RESERVED_PREFIXES)} are reserved for code checks")
        return value

    @property
    def source(self) -> str:
        """`file:line` where this criterion was defined."""
        return self._source if self._line is None else f"{self._source}:{self._line}"

    def applies(self, tags: list[str]) -> bool:
        """True when the criterion applies to a scenario with these tags (no `applies_to` = all)."""
        return not self.applies_to or bool(set(self.applies_to) & set(tags))

    def canonical(self) -> str:
        """The rubric as canonical JSON: what the judge set's hash covers (not the file's layout or notes)."""
        data = self.model_dump(by_alias=True, exclude={"notes"})
        return json.dumps(data, sort_keys=True, ensure_ascii=False)


def criterion_files(paths: list[Path]) -> list[Path]:
    """All YAML files under the given files and folders, recursively."""
    files: list[Path] = []
    for path in (Path(os.path.normpath(p)) for p in paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")))
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{path}: no such file or folder; check the judges paths")
    return files


def _items(source: LocatedYAML) -> tuple[list[tuple[Any, tuple[str | int, ...]]], list[Problem]]:
    data = source.data
    if data is None:
        return [], [Problem(str(source.path), "the file is empty; write a criterion mapping or a list")]
    if isinstance(data, list):
        return [(item, (index,)) for index, item in enumerate(data)], []
    if isinstance(data, dict) and isinstance(data.get("criteria"), list) and "criterion" not in data:
        return [(item, ("criteria", index)) for index, item in enumerate(data["criteria"])], []
    return [(data, ())], []


def _parse_file(source: LocatedYAML) -> tuple[list[Criterion], list[Problem]]:
    items, problems = _items(source)
    criteria: list[Criterion] = []
    for item, base in items:
        if not isinstance(item, dict):
            problems.append(
                Problem(
                    str(source.path),
                    "a criterion must be a mapping with id, criterion, pass, fail, ...",
                    line=source.line_of(base),
                )
            )
            continue
        criterion, found = validate_model(Criterion, item, source, base)
        problems.extend(found)
        if criterion is not None:
            criterion._source = str(source.path)
            criterion._line = source.line_of(base)
            criteria.append(criterion)
    return criteria, problems


def load_criteria(paths: list[Path]) -> list[Criterion]:
    """Load and validate every criterion; raise one UserError listing every problem in every file."""
    problems: list[Problem] = []
    criteria: list[Criterion] = []
    for file in criterion_files(paths):
        try:
            source = load_yaml(file)
        except YAMLProblem as exc:
            problems.append(exc.problem)
            continue
        found, file_problems = _parse_file(source)
        criteria.extend(found)
        problems.extend(file_problems)
    seen: dict[str, Criterion] = {}
    for criterion in criteria:
        first = seen.setdefault(criterion.id, criterion)
        if first is not criterion:
            problems.append(
                Problem(
                    criterion._source,
                    f"duplicate criterion id '{criterion.id}' (first defined at {first.source}); "
                    "give each criterion a unique id",
                    line=criterion._line,
                    field="id",
                )
            )
    if problems:
        raise UserError("invalid judge files", problems)
    return criteria
