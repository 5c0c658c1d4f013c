"""Code checks on a bot's reply: required phrases, forbidden phrases, a forbidden regex, with quoted evidence.

Each `must_contain` entry is a group of alternatives separated by `|` ("cannot find|not found"); every
group must be satisfied by at least one of its alternatives. A `must_not_contain` entry may list several
forbidden phrases the same way ("in transit|expected on"); any of them fails the reply. Matching is
case-insensitive substring matching on the original text, so the evidence is an exact quote of the reply,
like a judge's evidence.
"""

from __future__ import annotations

__all__ = ["AssertionScope", "AssertionSpec", "check_assertions"]

import re
from collections.abc import Sequence

from pydantic import Field

from simulator.config.assertions import AssertionScope, AssertionSpec, compile_pattern, split_group
from simulator.models import StrictModel, empty_list


class AssertionOutcome(StrictModel):
    """The result of checking one reply: pass/fail, one message per failed rule, and the quoted matches."""

    passed: bool
    failures: list[str] = Field(default_factory=empty_list)
    # Exact quotes from the reply: the alternative found for each group, each forbidden phrase or regex match.
    evidence: list[str] = Field(default_factory=empty_list)


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
