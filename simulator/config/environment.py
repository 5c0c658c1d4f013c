"""The `environment:` section of a suite: tools over a state dict that the bot (and the simulated user) act on.

A team writes it in YAML: each tool has a JSON-schema `parameters` object and one implementation, either a
Python function (`function: module:function`, called as `function(state, **arguments)`, free to change the
state) or canned answers keyed by arguments (`responses:`, with a `default`). `state` is the suite's default
initial state; a scenario's `environment:` is merged over it (docs/environment.md). `user_tools` are what the
simulated person can do on their side (read a thermometer): each reads a dotted path of the state or calls a
function. Only the spec and its checks live here; running a tool is in simulator/bots/environment.py.
"""

from __future__ import annotations

__all__ = [
    "EnvironmentSpec",
    "ToolDef",
    "UserToolDef",
    "check_environment_functions",
    "load_function",
    "merge_state",
]

import copy
from collections.abc import Callable
from typing import Any

from pydantic import Field, field_validator, model_validator

from simulator.errors import FieldProblem, Problem, field_path
from simulator.importing import import_callable
from simulator.models import StrictModel as _Strict
from simulator.models import empty_dict, empty_list

_NAME = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
_FUNCTION = r"^[\w.]+:[\w.]+$"


def _check_schema(value: dict[str, Any]) -> dict[str, Any]:
    """A tool's `parameters` must be a JSON schema of an object (what every provider's tool format takes)."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"not a valid JSON schema: {exc.message}") from None
    if value.get("type", "object") != "object":
        raise ValueError("a tool's parameters must be a JSON schema with type: object")
    return {"type": "object", "properties": {}, **value}


class CannedResponse(_Strict):
    """One canned answer: when the call's arguments include every key of `when` (equal values), answer
    `result`, or fail with `error`."""

    when: dict[str, Any] = Field(default_factory=empty_dict)
    result: Any = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_answer(self) -> CannedResponse:
        # `result: null` beside an error is how a record writes an error response back (every field dumped).
        given = {"error"} if self.error is not None else set()
        if "result" in self.model_fields_set and (self.result is not None or self.error is None):
            given.add("result")
        if len(given) != 1:
            raise FieldProblem(
                "a canned response answers with exactly one of `result` (what the tool returns; null is a "
                f"result) or `error` (why it failed); this one has {' and '.join(sorted(given)) or 'neither'}",
                *(("error",) if given else ()),
            )
        return self


class ToolDef(_Strict):
    """A tool the bot under test may call: its description, its JSON-schema parameters and one
    implementation (a function over the state, or canned responses)."""

    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    function: str | None = Field(default=None, pattern=_FUNCTION)
    responses: list[CannedResponse] = Field(default_factory=empty_list)
    # The answer when no canned response matches (a `result` or an `error`); none: the call is an error.
    default: CannedResponse | None = None

    @field_validator("parameters")
    @classmethod
    def _schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_schema(value)

    @model_validator(mode="after")
    def _one_implementation(self) -> ToolDef:
        if self.function is None and not self.responses and self.default is None:
            raise FieldProblem("a tool needs an implementation: function (module:function) or responses")
        if self.function is not None and (self.responses or self.default is not None):
            raise FieldProblem("give a tool either function or responses/default, not both", "function")
        return self


class UserToolDef(_Strict):
    """Something the simulated person can do on their side (look at a thermometer, read a rash): it reads
    `reads` (a dotted path of the conversation's state, e.g. `readings.temperature`) or calls `function`.

    The offline user uses it when the bot's message shares a word with `asked_by` (default: the words of
    the tool's name and description) and answers with `say` (`{value}` is the reading)."""

    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    reads: str | None = Field(default=None, min_length=1)
    function: str | None = Field(default=None, pattern=_FUNCTION)
    asked_by: list[str] = Field(default_factory=empty_list)
    say: str = "I checked: {value}."
    # What the offline user says when the reading fails (the state has no such value).
    unavailable: str = "I can't check that right now."

    @field_validator("parameters")
    @classmethod
    def _schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_schema(value)

    @model_validator(mode="after")
    def _one_source(self) -> UserToolDef:
        if (self.reads is None) == (self.function is None):
            both = () if self.function is None else ("function",)
            raise FieldProblem(
                "a user tool needs exactly one of reads (a dotted state path) or function", *both
            )
        return self


class EnvironmentSpec(_Strict):
    """The suite's environment: its tools, the default initial state, and the user-side tools."""

    tools: dict[str, ToolDef] = Field(default_factory=empty_dict)
    state: dict[str, Any] = Field(default_factory=empty_dict)
    user_tools: dict[str, UserToolDef] = Field(default_factory=empty_dict)
    # The chat adapter's bound on model -> tool -> model rounds within one bot turn.
    max_tool_rounds: int = Field(default=5, ge=1, le=50)
    # A tool call that takes longer is recorded as an error (the function's thread is left to finish).
    tool_timeout_s: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _names(self) -> EnvironmentSpec:
        import re

        for section, names in (("tools", self.tools), ("user_tools", self.user_tools)):
            for name in names:
                if not re.match(_NAME, name):
                    raise FieldProblem(
                        f"tool name '{name}' must be letters, digits, _ or - (up to 64), starting with a letter",
                        section,
                        name,
                    )
        both = sorted(set(self.tools) & set(self.user_tools))
        if both:
            raise FieldProblem(
                f"{both} named both as a tool and a user tool; give each its own name", "user_tools", both[0]
            )
        return self


def load_function(spec: str) -> Callable[..., Any]:
    """Import `module:function`; raise ValueError naming the spec and what is wrong."""
    return import_callable(spec, "module:function", "examples.clinic_env.tools:book_appointment")


def check_environment_functions(
    spec: EnvironmentSpec, file: str, line_of: Callable[[tuple[str | int, ...]], int | None]
) -> list[Problem]:
    """Every `function` the environment names must import: one Problem per one that does not."""
    problems = []
    for section, tools in (("tools", spec.tools), ("user_tools", spec.user_tools)):
        for name, tool in tools.items():
            if tool.function is None:
                continue
            try:
                load_function(tool.function)
            except ValueError as exc:
                loc = ("environment", section, name, "function")
                problems.append(Problem(file, str(exc), line_of(loc), field_path(loc)))
    return problems


def merge_state(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """A scenario's state merged over the suite's: mappings merge key by key, anything else replaces.
    Returns a fresh deep copy, so no conversation shares state with another."""
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_state(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
