"""Checks on what the bot did, declared in YAML (docs/tool-checks.md): tool calls made or not made, with
argument matchers, counts and ordering; claims that must match actions; and paths of the final state.

Only the spec and its validation live here; deciding a check on a conversation is in
simulator/judging/tool_checks.py.
"""

from __future__ import annotations

__all__ = [
    "ArgMatcher",
    "ToolCheck",
    "ToolChecksConfig",
    "parse_state_path",
    "read_state_path",
    "unknown_tool",
]

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from simulator.config.assertions import compile_pattern
from simulator.config.claims import ClaimRule, default_claims
from simulator.errors import FieldProblem, did_you_mean
from simulator.models import StrictModel as _Strict
from simulator.models import empty_dict, empty_list

_MATCHER_KEYS = frozenset({"equal", "one_of", "regex", "schema", "schema_"})
_ANCHOR = re.compile(r"^(?:first_advice|handover|tool\s+[A-Za-z_*][A-Za-z0-9_-]*)$")
_PATH_STEP = re.compile(r"\s*([^.\[\]]+)|\[(-?\d+)\]|\.")


def parse_state_path(path: str) -> list[str | int]:
    """A dotted path of the state, `appointments[0].urgency` or `appointments.0.urgency`, as its steps;
    ValueError for one that cannot be read."""
    steps: list[str | int] = []
    position = 0
    text = path.strip()
    if not text:
        raise ValueError("an empty state path; write e.g. appointments[0].urgency")
    while position < len(text):
        match = _PATH_STEP.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot read the state path `{path}` at character {position + 1}")
        if match.group(1) is not None:
            word = match.group(1).strip()
            steps.append(int(word) if re.fullmatch(r"-?\d+", word) else word)
        elif match.group(2) is not None:
            steps.append(int(match.group(2)))
        position = match.end()
    return steps


def _valid_schema(value: dict[str, Any]) -> dict[str, Any]:
    """`value`, when it is a valid JSON schema; ValueError saying why not otherwise."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"not a valid JSON schema: {exc.message}") from None
    return value


# A JSON schema a value must satisfy (an argument's `schema`, a check's `arguments_schema`).
JSONSchema = Annotated[dict[str, Any], AfterValidator(_valid_schema)]


class ArgMatcher(_Strict):
    """How one argument must look: `equal` (case-insensitive for strings), `one_of`, `regex` (searched,
    case-insensitive) or `schema` (a JSON schema the value must satisfy). Several given: all must hold."""

    equal: Any = None
    one_of: list[Any] | None = None
    regex: str | None = None
    schema_: JSONSchema | None = Field(default=None, alias="schema")
    has_equal: bool = Field(default=False, exclude=True)

    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _plain_value_is_equal(cls, value: Any) -> Any:
        """A plain value (`urgency: emergency`) means `equal`; a mapping of matcher keys is a matcher."""
        if isinstance(value, dict) and value and set(value) <= _MATCHER_KEYS:
            return {**value, "has_equal": "equal" in value}
        return {"equal": value, "has_equal": True}

    @model_serializer(mode="wrap")
    def _only_what_was_given(self, handler: Any, info: Any) -> Any:
        """Dump only the matchers given, so a dump (the run manifest's suite) reads back as the same
        matcher: an unset `equal` must not come back as `equal: null`."""
        data = handler(self)
        if not isinstance(data, dict):
            return data
        given = {key: value for key, value in data.items() if value is not None and key != "has_equal"}
        if self.has_equal:
            given["equal"] = self.equal
        return given

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value, "regex")
        return value

    def describe(self) -> str:
        parts = []
        if self.has_equal:
            parts.append(f"= {self.equal!r}")
        if self.one_of is not None:
            parts.append(f"one of {self.one_of!r}")
        if self.regex is not None:
            parts.append(f"matches /{self.regex}/")
        if self.schema_ is not None:
            parts.append("fits its schema")
        return " and ".join(parts) or "anything"


Anchor = str  # first_advice | handover | "tool NAME"
_ARGUMENTS_SCHEMA = {
    "type": "object",
    "description": "argument name -> a value it must equal, or {equal, one_of, regex, schema}",
    "additionalProperties": True,
}


class ToolCheck(_Strict):
    """`tool_called: NAME` or `tool_not_called: NAME` (`*` is any tool), optionally with argument matchers,
    counts and an ordering window (docs/tool-checks.md)."""

    tool_called: str | None = None
    tool_not_called: str | None = None
    id: str | None = Field(default=None, pattern=r"^[\w.:-]+$")
    # Argument name -> a plain value (equal) or {equal, one_of, regex, schema}.
    arguments: Annotated[dict[str, ArgMatcher], WithJsonSchema(_ARGUMENTS_SCHEMA)] = Field(
        default_factory=empty_dict
    )
    # A JSON schema the whole arguments object must satisfy.
    arguments_schema: JSONSchema | None = None
    at_least: int | None = Field(default=None, ge=0)
    at_most: int | None = Field(default=None, ge=0)
    # The window a call must fall in (tool_called) or must not fall in (tool_not_called).
    before: Anchor | None = None
    after: Anchor | None = None
    before_turn: int | None = Field(default=None, ge=0)
    side: Literal["bot", "user"] = "bot"
    # tool_called: a call that returned an error counts too (an attempt is what is checked).
    allow_errors: bool = False
    severity: Literal["critical", "major", "minor"] = "major"

    @model_validator(mode="after")
    def _one_kind(self) -> ToolCheck:
        if (self.tool_called is None) == (self.tool_not_called is None):
            both = () if self.tool_called is None else ("tool_not_called",)
            raise FieldProblem("a tool check names exactly one of tool_called or tool_not_called", *both)
        for name in ("before", "after"):
            anchor = getattr(self, name)
            if anchor is not None and not _ANCHOR.match(anchor.strip()):
                raise FieldProblem(f"{name}: `{anchor}` must be first_advice, handover or `tool NAME`", name)
        if self.tool_not_called is not None and (self.at_least is not None or self.at_most is not None):
            raise FieldProblem(
                "at_least/at_most go with tool_called (tool_not_called means none at all)",
                "at_least" if self.at_least is not None else "at_most",
            )
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise FieldProblem(f"at_least {self.at_least} is more than at_most {self.at_most}", "at_least")
        return self

    @property
    def tool(self) -> str:
        return self.tool_called if self.tool_called is not None else str(self.tool_not_called)

    @property
    def wanted(self) -> bool:
        return self.tool_called is not None

    @property
    def check_id(self) -> str:
        """The verdict's criterion id: `id`, else `tool_called.NAME` / `tool_not_called.NAME`."""
        if self.id:
            return self.id
        kind = "tool_called" if self.wanted else "tool_not_called"
        return f"{kind}.{'any' if self.tool == '*' else self.tool}"


class ToolChecksConfig(_Strict):
    """The suite's checks on what the bot did: `checks` for every scenario, and `claims` (omitted: the
    documented defaults, config/claims.py; `[]`: none)."""

    checks: list[ToolCheck] = Field(default_factory=empty_list)
    claims: list[ClaimRule] | None = None

    @model_validator(mode="after")
    def _distinct_ids(self) -> ToolChecksConfig:
        ids = [c.check_id for c in self.checks] + [r.id for r in self.claims or []]
        again = next((n for n, i in enumerate(ids) if i in ids[:n]), None)
        if again is not None:
            at = ("checks", again) if again < len(self.checks) else ("claims", again - len(self.checks))
            raise FieldProblem(f"two checks have the id {ids[again]}; give each its own `id`", *at)
        return self

    def claim_rules(self) -> list[ClaimRule]:
        """The suite's claim rules, or the documented defaults when it wrote none (`claims: []`: none)."""
        return list(self.claims) if self.claims is not None else list(default_claims())

    def quiet_claims(self, has_environment: bool) -> bool:
        """Whether a claim rule writes a verdict only where the bot makes the claim: the defaults of a suite
        without an environment (its reports gain no line for a claim its bot never makes)."""
        return self.claims is None and not has_environment


def read_state_path(state: Any, path: str) -> tuple[bool, Any]:
    """The value at a dotted path of the state: (True, value), or (False, None) when the path is not there
    (a missing key, an index past the end, a step into something that is not a mapping or a list)."""
    value = state
    for step in parse_state_path(path):
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(value, dict) and (str(step) in value or step in value):
            value = value[step] if step in value else value[str(step)]
        else:
            return False, None
    return True, value


def unknown_tool(check: ToolCheck, bot_tools: list[str], user_tools: list[str]) -> str | None:
    """Why a check names a tool the environment does not have (a typo would fail every conversation
    silently), or None. `*` names any tool."""
    known = bot_tools if check.side == "bot" else user_tools
    names = [check.tool] + [
        anchor.split(None, 1)[1]
        for anchor in (check.before, check.after)
        if anchor and anchor.startswith("tool ")
    ]
    for name in names:
        if name != "*" and name not in known:
            hint = did_you_mean(name, known) or f"the {check.side} tools are: {', '.join(known) or 'none'}"
            return f"the check names tool '{name}', which the environment does not have; {hint}"
    return None
