"""Reading tau2-bench task files: the fields this engine maps, and every other field kept so that the
converter can list what it did not map (never a silent drop)."""

from __future__ import annotations

__all__ = ["Task", "read_tasks"]

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from simulator.errors import Problem, UserError, field_path, pattern_or_message
from simulator.models import ForeignModel, empty_dict
from simulator.readers import MAX_TAU2_BYTES, read_json_file


class _Open(ForeignModel):
    """tau2's models, read leniently: unknown fields are kept (`model_extra`) and reported as not mapped."""


class Instructions(_Open):
    domain: str | None = None
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str = ""


class UserScenario(_Open):
    persona: str | None = None
    # Structured instructions, or one free text (older tasks).
    instructions: Instructions | str


class Action(_Open):
    action_id: str = ""
    requestor: str = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=empty_dict)
    compare_args: list[str] | None = None


class EnvCall(_Open):
    env_type: str = "assistant"
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=empty_dict)


class InitialState(_Open):
    initialization_data: dict[str, Any] | None = None
    initialization_actions: list[EnvCall] | None = None
    message_history: list[dict[str, Any]] | None = None


class Criteria(_Open):
    actions: list[Action] | None = None
    env_assertions: list[EnvCall] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[str] = Field(default_factory=lambda: ["DB", "COMMUNICATE"])


class Task(_Open):
    id: str
    description: dict[str, Any] | None = None
    user_scenario: UserScenario
    initial_state: InitialState | None = None
    evaluation_criteria: Criteria | None = None
    user_tools: list[str] | None = None


def read_tasks(path: Path) -> list[Task]:
    """The tasks of a tau2 `tasks.json`; a UserError naming the file, the task and the field otherwise."""
    data = read_json_file(path, MAX_TAU2_BYTES, "UTF-8 JSON (a tau2-bench tasks.json)")
    if not isinstance(data, list):
        raise UserError(f"{path}: a tau2 tasks file is a JSON list of tasks, found {type(data).__name__}")
    tasks, problems = [], []
    for index, item in enumerate(data):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = field_path(first["loc"])
            task_id = item.get("id", index + 1) if isinstance(item, dict) else index + 1
            problems.append(Problem(str(path), f"task {task_id}: {pattern_or_message(first)}", None, where))
    if problems:
        raise UserError(f"{path} does not read as tau2-bench tasks", problems)
    return tasks
