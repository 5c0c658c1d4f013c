"""Claims a bot makes about what it did, is doing or will do, and the tool call that must back each one
(docs/tool-checks.md): the rule a suite writes (`ClaimRule`), the defaults every suite gets without writing
any (`default_claims`), and the check that a rule names a tool something declares (`unknown_claim_tools`).

The defaults use generic verbs only (book, escalate, refer, send, call back): the engine knows no domain's
words. They cover the three ways bots say it: the past ("I've booked you in"), the present ("I'm booking
you in", "Booking you in now") and the promise ("I'll book", "we will send you a link", "a nurse will call
you back within 2 hours"). A promise counts as a claim: the patient acts on it as on a done deed, so
something must already have been set in motion when it is made.
"""

from __future__ import annotations

__all__ = ["ClaimRule", "default_claims", "folded", "needed_words", "unknown_claim_tools"]

import functools
from typing import Literal

from pydantic import Field, field_validator, model_validator

from simulator.config.patterns import compile_pattern
from simulator.errors import FieldProblem, did_you_mean
from simulator.models import StrictModel, empty_list


class ClaimRule(StrictModel):
    """A thing the bot may say it did (`says`, a regex searched in its text) and the tool call that must
    back it: `tool` (one name), `tools` (any of them) or `tool_matches` (a regex on tool names)."""

    id: str = Field(pattern=r"^[\w.:-]+$")
    says: str
    tool: str | None = None
    tools: list[str] = Field(default_factory=empty_list)
    tool_matches: str | None = None
    severity: Literal["critical", "major", "minor"] = "critical"

    @field_validator("says")
    @classmethod
    def _says_compiles(cls, value: str) -> str:
        compile_pattern(value, "says")
        return value

    @field_validator("tool_matches")
    @classmethod
    def _matches_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value, "tool_matches")
        return value

    @model_validator(mode="after")
    def _names_a_tool(self) -> ClaimRule:
        if self.tool is None and not self.tools and self.tool_matches is None:
            raise FieldProblem("a claim names the call that backs it: tool, tools or tool_matches")
        return self

    def backs(self, name: str) -> bool:
        """Whether a call of tool `name` backs this claim."""
        if name == self.tool or name in self.tools:
            return True
        return self.tool_matches is not None and bool(compile_pattern(self.tool_matches).search(name))

    def named_tools(self) -> list[str]:
        """The tools the rule names outright (`tool`, `tools`); a `tool_matches` pattern names none."""
        return ([self.tool] if self.tool else []) + list(self.tools)


_ADVERB = r"(?:just\s+|now\s+|already\s+|also\s+)?"
# A promise the rest of its sentence makes conditional ("we'll send you an email once it is processed", "I'll
# book you in if you want") states a policy or an offer, not an action already set in motion.
_UNCONDITIONAL = r"(?![^.!?\n]*\b(?:if|once|when|whenever|unless|as\s+soon\s+as|after|should\s+you)\b)"
_I = r"\b(?:I|we)"
_APOS = r"(?:'|\u2019)"


def _said(past: str, present: str, base: str) -> str:
    """The three tenses of one generic action, first person or passive (never "I can", "would you like")."""
    return "|".join(
        (
            # past: "I've booked", "we have just sent", "has been booked"
            rf"{_I}(?:{_APOS}ve|\s+have)?\s+{_ADVERB}(?:{past})\b",
            rf"\b(?:has|have)\s+(?:now\s+|just\s+|already\s+)?been\s+(?:{past})\b",
            # present: "I'm booking", "we are sending", "Booking you in now."
            rf"{_I}(?:{_APOS}m|{_APOS}re|\s+am|\s+are)\s+{_ADVERB}(?:{present})\b",
            rf"(?:^|(?<=[.!?:]\s*))\s*(?:now\s+)?(?:{present})\s+(?:you|your|it|that|this|the|an?)\b",
            # promise: "I'll book", "we will send", "I'm going to refer", "let me book", "will be sent"
            rf"{_I}(?:{_APOS}ll|\s+will|\s+shall|{_APOS}m\s+going\s+to|\s+am\s+going\s+to|{_APOS}re\s+going\s+to"
            rf"|\s+are\s+going\s+to)\s+{_ADVERB}(?:{base})\b{_UNCONDITIONAL}",
            rf"\blet\s+me\s+{_ADVERB}(?:{base})\b{_UNCONDITIONAL}",
            rf"\bwill\s+(?:now\s+)?be\s+(?:{past})\b{_UNCONDITIONAL}",
        )
    )


# A call back promised by anyone ("a nurse will call you back within 2 hours", "someone will ring you",
# "you'll get a call", "I've asked a doctor to phone you", "we'll contact you").
_CALL = r"(?:call|ring|phone|contact)"
_CALLBACK = "|".join(
    (
        rf"\b(?:will|{_APOS}ll|shall|(?:is|are)\s+going\s+to)\s+{_ADVERB}(?:give\s+you\s+a\s+(?:call|ring)|{_CALL}\s+you)\b"
        + _UNCONDITIONAL,
        rf"\byou(?:{_APOS}ll|\s+will)\s+(?:get|receive|have)\s+an?\s+(?:phone\s+)?(?:call|callback|ring)\b"
        + _UNCONDITIONAL,
        rf"\b(?:asked|arranged\s+for|told)\s+(?:a|an|the|our|one\s+of\s+our)\s+[\w ]{{1,30}}?\s+to\s+{_CALL}\s+you\b",
        r"\b(?:requested|arranged|booked|scheduled)\s+(?:a|an|your)\s+(?:call\s*back|callback|phone\s+call)\b",
        r"\bexpect\s+an?\s+(?:phone\s+)?(?:call|callback)\b",
    )
)

_WORD_START = r"(?:^|[_.\-])"  # a tool-name word: `book_appointment`, `patient.book`, never `facebook`


# The default actions: (id, past, present, base, the tool-name stem that backs them).
_ACTIONS = (
    ("claim.booked", "booked|scheduled|reserved", "booking|scheduling|reserving", "book|schedule|reserve",
     "(?:book|schedul|reserv)"),
    ("claim.escalated", "escalated", "escalating", "escalate", "escalat"),
    ("claim.referred", "referred", "referring", "refer", "refer"),
    ("claim.sent", "sent|emailed|texted", "sending|emailing|texting", "send|email|text",
     "(?:send|sent|e?mail|text|sms|notif)"),
)  # fmt: skip
_CALLBACK_WORDS = ("call", "ring", "phone", "contact")  # every alternative of _CALLBACK names one of them


@functools.cache
def _defaults() -> dict[str, tuple[ClaimRule, tuple[str, ...]]]:
    """Each default rule by id, with the words one of which a text must hold for its `says` to match: every
    alternative of the pattern names one of them, so a text with none of them cannot match."""
    rules = {}
    for id_, past, present, base, tools in _ACTIONS:
        words = tuple(dict.fromkeys(f"{past}|{present}|{base}".split("|")))
        says = _said(past, present, base)
        rules[id_] = (_constant_rule(id_, says, _WORD_START + tools), words)
    callback = _WORD_START + "(?:call|ring|phone|contact|escalat|refer|book|schedul|task|notif)"
    rules["claim.callback"] = (_constant_rule("claim.callback", _CALLBACK, callback), _CALLBACK_WORDS)
    return rules


def _constant_rule(id_: str, says: str, tool_matches: str) -> ClaimRule:
    """A default rule, built without compiling its patterns: they are the engine's own constants
    (tests/test_claims_default.py validates each), and compiling the five `says` took 0.14 G instructions,
    a tenth of a one-conversation run, for a bot that may never say any of their words."""
    return ClaimRule.model_construct(id=id_, says=says, tool_matches=tool_matches)


def default_claims() -> tuple[ClaimRule, ...]:
    """The claim rules of a suite that writes none. Built on first use: their patterns took a tenth of a
    run's start-up to compile at import, in every command (issue 47)."""
    return tuple(rule for rule, _ in _defaults().values())


def needed_words(rule: ClaimRule) -> tuple[str, ...] | None:
    """For a default rule (its `says` unchanged), the words one of which a text must hold, in any case, for
    the rule to match it; None for any other rule. A caller skips the texts without them, so a bot that
    never says them never costs the pattern's compiling."""
    default = _defaults().get(rule.id)
    return default[1] if default is not None and default[0].says == rule.says else None


def folded(text: str) -> str:
    """`text` as `needed_words` are looked for in it: case-folded, so that every character the
    case-insensitive pattern matches to a letter of a word is that letter (the dotted capital I folds to
    an i and a combining dot, which is dropped)."""
    return text.casefold().replace("\u0307", "")


def unknown_claim_tools(rule: ClaimRule, known: list[str]) -> str | None:
    """Why a rule names a tool nothing declares (it could never be backed, so every claim would fail), or
    None. `known`: the environment's tools and the ones the bot declares."""
    for name in rule.named_tools():
        if name not in known:
            hint = did_you_mean(name, known) or (
                f"the declared tools are: {', '.join(known)}"
                if known
                else "neither the environment nor the bot declares any tool; back it with tool_matches, or "
                "add the tool to the suite's environment"
            )
            return f"claim {rule.id} names tool '{name}', which no environment or bot declares; {hint}"
    return None
