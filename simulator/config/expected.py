"""What a scenario's `expected` block may hold: one type for the scenario file, the run's manifest
(record/manifest.py ScenarioEntry) and an outcome check's verdict (record/models.py Verdict), so a value the
reports cannot count (a list where a level goes: `triage_level: [emergency]`) is refused where it is read,
naming its key, never met later as a traceback.

Each key holds one value compared with the bot's final state or the stop reason: text, a number, true or
false (or null). Only `environment` holds a mapping, of paths of the environment's final state to values
(docs/environment.md)."""

from __future__ import annotations

__all__ = ["ENVIRONMENT_KEY", "Expected", "environment_paths", "expected_value_problem"]

from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

# The `expected` key whose value holds paths of the environment's final state (docs/environment.md).
ENVIRONMENT_KEY = "environment"

ExpectedValue = str | bool | int | float | None


def expected_value_problem(key: str, value: Any) -> str | None:
    """Why `value` cannot be expected under `key`, in words; None when it can."""
    if key == ENVIRONMENT_KEY:
        return (
            None if isinstance(value, dict) else "should map state paths to values, e.g. `status: confirmed`"
        )
    if value is None or isinstance(value, str | bool | int | float):
        return None
    kind = (
        "a mapping"
        if isinstance(value, dict)
        else "a list"
        if isinstance(value, list)
        else type(value).__name__
    )
    return f"should be one value (text, a number, true or false), not {kind}; write the one level or value expected"


def _one_value_per_key(value: Any) -> Any:
    """Each key's value checked before the union reads it, so the refusal names the key and says why in
    words (pydantic's union would name each type it tried)."""
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        problem = expected_value_problem(str(key), item)
        if problem is not None:
            error = PydanticCustomError("expected_value", problem)
            raise ValidationError.from_exception_data(
                "expected", [InitErrorDetails(type=error, loc=(str(key),), input=item)]
            )
    return value


# `environment`'s mapping is the one value of another shape; every other key holds an ExpectedValue.
Expected = Annotated[dict[str, ExpectedValue | dict[str, Any]], BeforeValidator(_one_value_per_key)]


def environment_paths(expected: dict[str, Any]) -> dict[str, Any]:
    """The paths of the environment's final state an `expected` block compares (empty when none)."""
    paths = expected.get(ENVIRONMENT_KEY)
    return paths if isinstance(paths, dict) else {}
