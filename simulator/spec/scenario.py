"""Scenarios as data: a persona, a goal and hidden facts, loaded from YAML files written by domain experts."""

from __future__ import annotations

__all__ = ["Scenario", "load_scenarios", "scenario_files"]

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints, WithJsonSchema, field_validator

from simulator.errors import UserError
from simulator.spec.assertions import AssertionSpec
from simulator.spec.documents import DocumentKind, FileDocument, load_documents, yaml_files
from simulator.spec.suite import is_suite_data

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
# Facts are a list of strings or one paragraph (split into sentences): the editor schema allows both.
_FACTS_SCHEMA = {
    "anyOf": [
        {"type": "array", "items": {"type": "string", "minLength": 1}},
        {"type": "string", "minLength": 1, "description": "one paragraph, split into sentences"},
    ],
    "title": "Facts",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


class Scenario(FileDocument):
    """One simulated conversation to run: who the user is, what they want, what they know."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, pattern=r"^[^\s#]+$")]
    persona: Text
    goal: Text
    facts: Annotated[list[Text], WithJsonSchema(_FACTS_SCHEMA)] = Field(default_factory=list)
    expected: dict[str, Any] = Field(default_factory=dict)
    max_turns: int = Field(default=12, ge=1, le=200)
    tags: list[Text] = Field(default_factory=list)
    language: str | None = None
    notes: str | None = None
    # A reference final reply, for text metrics (recorded, gating nothing).
    reference: str | None = None
    # Deterministic assertions on the bot's messages (checked in code, no LLM).
    assertions: AssertionSpec | None = None

    @field_validator("facts", mode="before")
    @classmethod
    def _facts_from_text(cls, value: Any) -> Any:
        """Facts may be one paragraph (as in the seed) or a list; a paragraph is split into sentences."""
        if isinstance(value, str):
            return [part.strip() for part in _SENTENCE_END.split(value.strip()) if part.strip()]
        return value


def scenario_files(paths: list[Path]) -> list[Path]:
    """All YAML files under the given files and folders (recursively); suite files among them are told apart
    by their content when loaded (`is_suite_data`), whatever their names."""
    return yaml_files(paths, what="scenarios")


SCENARIO_DOCUMENTS = DocumentKind(
    model=Scenario,
    noun="scenario",
    list_key="scenarios",
    marker_key="persona",
    shape="id, persona, goal, ...",
    error_title="invalid scenario files",
    is_other=is_suite_data,
)


def load_scenarios(paths: list[Path], tags: list[str] | None = None) -> list[Scenario]:
    """Load and validate every scenario; raise one UserError listing every problem in every file."""
    scenarios: list[Scenario] = load_documents(scenario_files(paths), SCENARIO_DOCUMENTS)
    if not scenarios:
        raise UserError(f"no scenarios found in {', '.join(map(str, paths))}; add .yaml scenario files")
    if tags:
        scenarios = [s for s in scenarios if set(s.tags) & set(tags)]
        if not scenarios:
            raise UserError(f"no scenario has any of the tags {tags}; check --tags or the suite's tag filter")
    return scenarios
