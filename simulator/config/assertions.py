"""Assertion fields a scenario or golden item declares (seed 003): required phrases, forbidden phrases and
a forbidden regex. Only the spec and its validation live here; checking a reply is in judging/assertions.
"""

from __future__ import annotations

__all__ = ["AssertionFields", "AssertionScope", "AssertionSpec", "compile_pattern", "split_group"]

from typing import Literal

from pydantic import Field, field_validator

from simulator.config.patterns import compile_pattern
from simulator.models import StrictModel, empty_list

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


class AssertionFields(StrictModel):
    """The three assertions of seed 003, validated; shared by scenario assertions and golden items."""

    must_contain: list[str] = Field(default_factory=empty_list)
    must_not_contain: list[str] = Field(default_factory=empty_list)
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

    scope: AssertionScope = "all_bot_messages"

    @property
    def is_empty(self) -> bool:
        """True when the spec asserts nothing (every reply would pass)."""
        return not (self.must_contain or self.must_not_contain or self.must_not_match)
