"""Scenarios as data: a persona, a goal and hidden facts, loaded from YAML files written by domain experts."""

from __future__ import annotations

__all__ = ["Scenario", "load_scenarios", "scenario_files"]

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, field_validator

from simulator.errors import Problem, UserError
from simulator.judging.assertions import AssertionSpec
from simulator.yamlfile import LocatedYAML, YAMLProblem, load_yaml, validate_model

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
SUITE_FILE_NAMES = ("suite.yaml", "suite.yml")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


class Scenario(BaseModel):
    """One simulated conversation to run: who the user is, what they want, what they know."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"^[^\s#]+$")]
    persona: Text
    goal: Text
    facts: list[Text] = Field(default_factory=list)
    expected: dict[str, Any] = Field(default_factory=dict)
    max_turns: int = Field(default=12, ge=1, le=200)
    tags: list[Text] = Field(default_factory=list)
    language: str | None = None
    notes: str | None = None
    # A reference final reply, for text metrics (recorded, gating nothing).
    reference: str | None = None
    # Deterministic assertions on the bot's messages (checked in code, no LLM).
    assertions: AssertionSpec | None = None

    _source: str = PrivateAttr(default="")
    _line: int | None = PrivateAttr(default=None)

    @field_validator("facts", mode="before")
    @classmethod
    def _facts_from_text(cls, value: Any) -> Any:
        """Facts may be one paragraph (as in the seed) or a list; a paragraph is split into sentences."""
        if isinstance(value, str):
            return [part.strip() for part in _SENTENCE_END.split(value.strip()) if part.strip()]
        return value

    @property
    def source(self) -> str:
        """`file:line` where this scenario was defined."""
        return self._source if self._line is None else f"{self._source}:{self._line}"


def scenario_files(paths: list[Path]) -> list[Path]:
    """All scenario YAML files under the given files and folders (recursively), suite files excluded."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
            files.extend(p for p in found if p.name not in SUITE_FILE_NAMES)
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"{path}: no such file or folder; check the path to your scenarios")
    return files


def _parse_file(source: LocatedYAML) -> tuple[list[Scenario], list[Problem]]:
    data = source.data
    if data is None:
        return [], [
            Problem(str(source.path), "the file is empty; write a scenario mapping or a list of them")
        ]
    items: list[tuple[Any, tuple[str | int, ...]]]
    if isinstance(data, list):
        items = [(item, (index,)) for index, item in enumerate(data)]
    elif isinstance(data, dict) and isinstance(data.get("scenarios"), list) and "persona" not in data:
        items = [(item, ("scenarios", index)) for index, item in enumerate(data["scenarios"])]
    else:
        items = [(data, ())]
    scenarios: list[Scenario] = []
    problems: list[Problem] = []
    for item, base in items:
        if not isinstance(item, dict):
            problems.append(
                Problem(
                    str(source.path),
                    "a scenario must be a mapping with id, persona, goal, ...",
                    line=source.line_of(base),
                )
            )
            continue
        scenario, found = validate_model(Scenario, item, source, base)
        problems.extend(found)
        if scenario is not None:
            scenario._source = str(source.path)
            scenario._line = source.line_of(base)
            scenarios.append(scenario)
    return scenarios, problems


def load_scenarios(paths: list[Path], tags: list[str] | None = None) -> list[Scenario]:
    """Load and validate every scenario; raise one UserError listing every problem in every file."""
    problems: list[Problem] = []
    scenarios: list[Scenario] = []
    for file in scenario_files(paths):
        try:
            source = load_yaml(file)
        except YAMLProblem as exc:
            problems.append(exc.problem)
            continue
        found, file_problems = _parse_file(source)
        scenarios.extend(found)
        problems.extend(file_problems)
    seen: dict[str, Scenario] = {}
    for scenario in scenarios:
        first = seen.setdefault(scenario.id, scenario)
        if first is not scenario:
            problems.append(
                Problem(
                    scenario._source,
                    f"duplicate scenario id '{scenario.id}' (first defined at "
                    f"{first.source}); give each scenario a unique id",
                    line=scenario._line,
                    field="id",
                )
            )
    if problems:
        raise UserError("invalid scenario files", problems)
    if not scenarios:
        raise UserError(f"no scenarios found in {', '.join(map(str, paths))}; add .yaml scenario files")
    if tags:
        scenarios = [s for s in scenarios if set(s.tags) & set(tags)]
        if not scenarios:
            raise UserError(f"no scenario has any of the tags {tags}; check --tags or the suite's tag filter")
    return scenarios
