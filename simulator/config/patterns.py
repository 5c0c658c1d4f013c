"""Regular expressions written by users, run on text written by bots, with a time limit per match.

A pattern such as `(a+)+$` backtracks exponentially: on a bot reply of forty characters Python's `re` runs
for minutes, and cannot be interrupted. Every user pattern (`must_not_match`, a style's `when`, vocabulary
outcome patterns, redaction rules) is compiled here with the `regex` module, which takes the same syntax
(lookarounds included) and stops a match at a time limit; a pattern that hits it raises `PatternTimeout`,
which names the pattern and where it was written, and the caller records it as an error.
"""

from __future__ import annotations

__all__ = ["MATCH_TIMEOUT_S", "PatternTimeout", "UserPattern", "compile_pattern", "schema_validator"]

import functools
from collections.abc import Callable
from typing import Any

import regex

from simulator.errors import UserError

# The longest one scan may take: a sane pattern over a long reply takes microseconds. Long texts get more
# (PER_MB_S a megabyte), so a linear pattern over a large import never hits the limit on a busy machine.
MATCH_TIMEOUT_S = 1.0
PER_MB_S = 2.0


def time_limit(text: str) -> float:
    """The time limit of one scan of `text`."""
    return MATCH_TIMEOUT_S + PER_MB_S * len(text) / 1_000_000


class PatternTimeout(UserError):
    """A user's pattern that took longer than MATCH_TIMEOUT_S on one text: a check records it as an error
    verdict naming it; anywhere else it is the one-line error of a user mistake."""

    def __init__(self, pattern: str, field: str, size: int) -> None:
        limit = MATCH_TIMEOUT_S + PER_MB_S * size / 1_000_000
        super().__init__(
            f"{field} `{pattern}` took more than {limit:.3g} s on {size:,} characters and was stopped; "
            "simplify it (nested repetition such as (a+)+ backtracks exponentially)"
        )
        self.pattern = pattern
        self.field = field


class UserPattern:
    """A compiled user pattern whose `search`, `finditer` and `sub` stop at the time limit."""

    def __init__(self, pattern: str, field: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.field = field
        self._compiled = regex.compile(pattern, flags)

    def search(self, text: str) -> Any:
        try:
            return self._compiled.search(text, timeout=time_limit(text))
        except TimeoutError:
            raise PatternTimeout(self.pattern, self.field, len(text)) from None

    def finditer(self, text: str) -> list[Any]:
        """Every match, found within the time limit (a list: the limit covers the whole scan)."""
        try:
            return list(self._compiled.finditer(text, timeout=time_limit(text)))
        except TimeoutError:
            raise PatternTimeout(self.pattern, self.field, len(text)) from None

    def sub(self, replace: str | Callable[[Any], str], text: str) -> str:
        try:
            result: str = self._compiled.sub(replace, text, timeout=time_limit(text))
        except TimeoutError:
            raise PatternTimeout(self.pattern, self.field, len(text)) from None
        return result


def compile_pattern(pattern: str, field: str = "must_not_match", *, ignore_case: bool = True) -> UserPattern:
    """Compile a regex from a user's file (case-insensitively unless told); a bad one raises ValueError
    naming the field, the pattern and why (every spec file that takes a regex checks it here)."""
    try:
        return UserPattern(pattern, field, regex.IGNORECASE if ignore_case else 0)
    except regex.error as exc:
        raise ValueError(f"{field} `{pattern}` is not a valid regular expression: {exc}") from None


@functools.cache
def _schema_validator_class() -> Any:
    """Draft 2020-12 with `pattern` and `patternProperties` run by the time-limited regex of user patterns
    (config/patterns.py): a parameter's `^(a+)+$` against a bot's argument stops at the limit and is that
    call's error, instead of hanging the run in Python's `re`."""
    import jsonschema
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

    def pattern(validator: Any, value: str, instance: Any, schema: dict[str, Any]) -> Any:
        if not isinstance(instance, str):
            return
        try:
            found = _compiled(value).search(instance)
        except ValueError as exc:
            found = None
            yield ValidationError(str(exc))
        if found is None:
            yield ValidationError(f"{instance[:80]!r} does not match {value!r}")

    def pattern_properties(
        validator: Any, value: dict[str, Any], instance: Any, schema: dict[str, Any]
    ) -> Any:
        if not isinstance(instance, dict):
            return
        for key, subschema in value.items():
            for name, item in instance.items():
                try:
                    matched = _compiled(key).search(name)
                except ValueError as exc:
                    yield ValidationError(str(exc))
                    return
                if matched:
                    yield from validator.descend(item, subschema, path=name, schema_path=key)

    return jsonschema.validators.extend(
        Draft202012Validator, {"pattern": pattern, "patternProperties": pattern_properties}
    )


@functools.lru_cache(maxsize=256)
def _compiled(value: str) -> UserPattern:
    """A parameter's pattern (ValueError naming it when it is no regular expression)."""
    return compile_pattern(value, "the tool parameters' pattern", ignore_case=False)


def schema_validator(schema: dict[str, Any]) -> Any:
    """A JSON-schema (draft 2020-12) validator of a user's schema whose patterns stop at the time limit;
    `iter_errors` raises PatternTimeout for a pattern that hits it."""
    return _schema_validator_class()(schema)
