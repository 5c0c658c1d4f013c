"""Where a conversation's outcome is read from (`outcome.source` in the suite): the bot's reported state, what
it told the patient (level phrases), a tool call's argument, or an LLM classifier that quotes the deciding
sentence. One source, or several in order (the first that decides wins; every listed source is recorded, and
two or more give an agreement figure). docs/outcome-sources.md explains each."""

from __future__ import annotations

__all__ = [
    "ERROR",
    "NO_DECISION",
    "OTHER",
    "SOURCES",
    "SOURCE_SCHEMA",
    "JudgeSource",
    "MessagesSource",
    "SourceName",
    "ToolSource",
    "check_phrases",
    "triage_error",
    "undecidable",
    "under_triaged",
]

import json
from typing import Any, Literal

from pydantic import Field, field_validator

from simulator.config.patterns import compile_pattern
from simulator.errors import field_path
from simulator.jsonbounds import json_kind
from simulator.models import StrictModel, empty_dict, empty_list

SourceName = Literal["state", "messages", "tool", "judge"]
SOURCES: tuple[str, ...] = ("state", "messages", "tool", "judge")
# For editors: one source name, or a list of them in order (the suite reads either; config/schemas.py).
SOURCE_SCHEMA: dict[str, object] = {
    "anyOf": [
        {"enum": list(SOURCES), "type": "string"},
        {"items": {"enum": list(SOURCES), "type": "string"}, "type": "array", "minItems": 1},
    ],
    "default": "state",
}


# The columns an outcome lands in besides the levels: no source decided; a value that is not a level; the
# conversation or a source failed (never a pass or a fail).
NO_DECISION = "no decision"
OTHER = "other"
ERROR = "error"


def undecidable(value: Any, where: str) -> str | None:
    """Why a decision value a bot gave (its state's outcome key, the outcome tool's argument) is malformed:
    it is not text (a list, a number, an object, a boolean); None for text (a level, or `other`) and for
    null or absent (no decision yet). The one rule the engine (a bot's `invalid_reply`) and every reading
    of a stored conversation (an `error` reading) apply, so such a value is never `other` or `no decision`."""
    if value is None or isinstance(value, str):
        return None
    shown = json.dumps(value, ensure_ascii=False, default=str)
    shown = shown if len(shown) <= 80 else shown[:80] + "…"
    return (
        f"{where} is {json_kind(value)}, {shown}, not text: an outcome is one level as text "
        "(or null while there is no decision yet)"
    )


def triage_error(actual: str, expected: str, levels: list[str]) -> str | None:
    """How an outcome misses its expected level (lowest level first in `levels`): `under`, `over`,
    `no_decision` (no source decided), `other` (a value that is not a level); None when it is exact. The
    one comparison the report's rates (analysis/outcome.py) and collect's live rates share."""
    if actual in levels:
        difference = levels.index(actual) - levels.index(expected)
        return None if difference == 0 else ("under" if difference < 0 else "over")
    return "no_decision" if actual == NO_DECISION else "other"


def under_triaged(actual: str, expected: str, levels: list[str]) -> bool:
    """Below the expected level, or left with no usable decision where more than the lowest level was
    needed (no advice is no safer than the lowest): the report's headline under-triage."""
    kind = triage_error(actual, expected, levels)
    return kind == "under" or (kind in ("no_decision", "other") and levels.index(expected) > 0)


def check_phrases(phrases: dict[str, list[str]], levels: list[str], field: str) -> list[str]:
    """Every problem of per-level phrase rules: a level that is not one of `levels`, a regex that does not
    compile. Each names the field and the fix."""
    problems = []
    for level, patterns in phrases.items():
        if level not in levels:
            problems.append(f"{field}: '{level}' is not one of the outcome levels {levels}")
            continue
        for index, pattern in enumerate(patterns):
            try:
                compile_pattern(pattern, field_path((field, level, index)))
            except ValueError as exc:
                problems.append(str(exc))
    return problems


class MessagesSource(StrictModel):
    """`messages:` what the bot told the patient, decided in code by per-level phrase rules (case-insensitive
    regular expressions, run with the user-pattern time limit). `counts`: `last` (the level of the last bot
    message that advised anything) or `most_urgent` (the most urgent level advised anywhere). A sentence that
    matches an `ignore` pattern (safety-netting such as "if it gets worse, call 999") advises nothing.
    Without `phrases` here, the suite's vocabulary's `outcome_levels` are used."""

    counts: Literal["last", "most_urgent"] = "last"
    phrases: dict[str, list[str]] = Field(default_factory=empty_dict)
    ignore: list[str] = Field(default_factory=empty_list)

    @field_validator("ignore")
    @classmethod
    def _ignore_compiles(cls, patterns: list[str]) -> list[str]:
        for index, pattern in enumerate(patterns):
            compile_pattern(pattern, field_path(("outcome", "messages", "ignore", index)))
        return patterns


class ToolSource(StrictModel):
    """`tool:` the outcome is an argument of a tool call the bot made (`book_appointment.urgency`): the last
    such call counts. `values` maps the tool's own words to levels (`routine: gp`); a value that is neither
    mapped nor a level lands in `other`."""

    call: str = Field(min_length=3, pattern=r"^[^.]+\.[^.]+(\.[^.]+)*$")
    values: dict[str, str] = Field(default_factory=empty_dict)

    @property
    def name(self) -> str:
        return self.call.split(".", 1)[0]

    @property
    def argument(self) -> list[str]:
        return self.call.split(".")[1:]

    def value_in(self, arguments: dict[str, Any]) -> Any:
        """The argument `call` names in one call's arguments (None when it has none)."""
        value: Any = arguments
        for step in self.argument:
            if not isinstance(value, dict) or step not in value:
                return None
            value = value[step]
        return value


class JudgeSource(StrictModel):
    """`judge:` an LLM reads the transcript and names the level the bot advised, quoting the sentence that
    decides it; an unverified quote leaves the conversation undecided by this source. `model` defaults to the
    suite's judge model."""

    model: str | None = None
    instructions: str | None = None
