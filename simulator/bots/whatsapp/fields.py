"""The field checks every Cloud API rule is written with: a refusal (`RuleBroken`) names the field and the rule.

The real API refuses a message that breaks a rule (HTTP 400, error code 131009 or 100); the person never sees
it. Here each refusal is a `RuleBroken`, so the run records the bot's mistake as an error, never as a pass or a
fail (rules.py, interactive.py, templates.py).
"""

from __future__ import annotations

__all__ = ["RuleBroken", "list_field", "number_field", "object_field", "text_field", "unique"]

import math
from typing import Any


class RuleBroken(Exception):
    """A message the Cloud API would refuse: `field` and the rule in words."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


def text_field(value: Any, field: str, limit: int, *, required: bool = True) -> str | None:
    """A string of at most `limit` characters; None when it may be absent and is."""
    if value is None or value == "":
        if required:
            raise RuleBroken(field, "is required and must be non-empty text")
        return None
    if not isinstance(value, str):
        raise RuleBroken(field, f"must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise RuleBroken(field, f"is at most {limit} characters; the bot sent {len(value)} ({value[:40]!r})")
    return value


def number_field(value: Any, field: str, low: float, high: float) -> float:
    """A required number from `low` to `high` (the API takes it as a JSON number or a numeric string)."""
    try:
        number = (
            float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else None
        )
    except ValueError:
        number = None
    if number is None or not math.isfinite(number):
        raise RuleBroken(field, f"is required and must be a number; the bot sent {str(value)[:40]!r}")
    if not low <= number <= high:
        raise RuleBroken(field, f"must be from {low:g} to {high:g}; the bot sent {number:g}")
    return number


def object_field(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RuleBroken(field, "is required and must be an object")
    return value


def list_field(value: Any, field: str, low: int, high: int, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise RuleBroken(field, f"is required and must be a list of {what}")
    if not low <= len(value) <= high:
        raise RuleBroken(field, f"takes {low} to {high} {what}; the bot sent {len(value)}")
    return value


def unique(values: list[str], field: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise RuleBroken(field, f"must be unique within the message; {value!r} appears twice")
        seen.add(value)
