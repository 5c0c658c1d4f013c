"""Code checks on a bot's reply: required phrases, forbidden phrases, a forbidden regex, with quoted evidence.

Each `must_contain` entry is a group of alternatives separated by `|` ("cannot find|not found"); every
group must be satisfied by at least one of its alternatives. A `must_not_contain` entry may list several
forbidden phrases the same way ("in transit|expected on"); any of them fails the reply. Matching is
case-insensitive substring matching on the original text, so the evidence is an exact quote of the reply,
like a judge's evidence.
"""

from __future__ import annotations

__all__ = [
    "AssertionOutcome",
    "AssertionScope",
    "AssertionSpec",
    "check_assertions",
    "check_phrase_groups",
    "compile_pattern",
    "split_group",
]

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

AssertionScope = Literal["all_bot_messages", "final_bot_message"]


def split_group(group: str) -> list[str]:
    """The alternatives of one `must_contain` group ("a|b" -> ["a", "b"]), stripped."""
    return [alternative.strip() for alternative in group.split("|")]


def check_phrase_groups(groups: list[str]) -> list[str]:
    """Reject empty phrases in `must_contain` / `must_not_contain` groups (an empty one matches anything)."""
    for group in groups:
        if any(not part for part in split_group(group)):
            raise ValueError(f"empty phrase in {group!r}: every phrase needs at least one character")
    return groups


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a `must_not_match` regex case-insensitively; a bad one raises ValueError naming it and why."""
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"must_not_match `{pattern}` is not a valid regular expression: {exc}") from None


class AssertionFields(BaseModel):
    """The three assertions of seed 003, validated; shared by scenario assertions and golden items."""

    must_contain: list[str] = Field(default_factory=list)
    must_not_contain: list[str] = Field(default_factory=list)
    must_not_match: str | None = None

    @field_validator("must_contain", "must_not_contain", mode="before")
    @classmethod
    def _one_phrase_is_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("must_contain", "must_not_contain")
    @classmethod
    def _phrases_not_empty(cls, value: list[str]) -> list[str]:
        return check_phrase_groups(value)

    @field_validator("must_not_match")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value)
        return value or None


class AssertionSpec(AssertionFields):
    """What a correct reply must contain and must not contain (all case-insensitive)."""

    model_config = ConfigDict(extra="forbid")

    scope: AssertionScope = "all_bot_messages"

    @property
    def is_empty(self) -> bool:
        """True when the spec asserts nothing (every reply would pass)."""
        return not (self.must_contain or self.must_not_contain or self.must_not_match)


class AssertionOutcome(BaseModel):
    """The result of checking one reply: pass/fail, one message per failed rule, and the quoted matches."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    failures: list[str] = Field(default_factory=list)
    # Exact quotes from the reply: the alternative found for each group, each forbidden phrase or regex match.
    evidence: list[str] = Field(default_factory=list)


def _find(phrase: str, text: str) -> str | None:
    match = re.search(re.escape(phrase), text, re.IGNORECASE)
    return match.group(0) if match else None


def _select(spec: AssertionSpec, text: str | Sequence[str]) -> str:
    if isinstance(text, str):
        return text
    messages = list(text)
    if spec.scope == "final_bot_message":
        return messages[-1] if messages else ""
    return "\n".join(messages)


def check_assertions(spec: AssertionSpec, text: str | Sequence[str]) -> AssertionOutcome:
    """Check a reply against the spec; `text` is the reply, or the bot's messages (then `scope` applies)."""
    reply = _select(spec, text)
    failures: list[str] = []
    evidence: list[str] = []
    for group in spec.must_contain:
        alternatives = split_group(group)
        found = next((quote for alt in alternatives if (quote := _find(alt, reply)) is not None), None)
        if found is None:
            wanted = " | ".join(f'"{alt}"' for alt in alternatives)
            failures.append(f"missing {wanted}" if len(alternatives) == 1 else f"missing one of {wanted}")
        else:
            evidence.append(found)
    for group in spec.must_not_contain:
        for phrase in split_group(group):
            quote = _find(phrase, reply)
            if quote is not None:
                failures.append(f'contains forbidden "{phrase}"')
                evidence.append(quote)
    if spec.must_not_match:
        match = compile_pattern(spec.must_not_match).search(reply)
        if match is not None:
            failures.append(f'matches forbidden pattern `{spec.must_not_match}`: "{match.group(0)}"')
            evidence.append(match.group(0))
    return AssertionOutcome(passed=not failures, failures=failures, evidence=evidence)
