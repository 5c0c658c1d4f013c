"""Loads the example triage bot's rule table (`triage_rules.yaml`) and matches red-flag phrases in text.

The rules live in YAML so a clinician can review them on one page without reading Python.
They are a demonstration, not clinical advice.
"""

from __future__ import annotations

__all__ = [
    "LEVELS",
    "Complaint",
    "Flag",
    "Question",
    "Rules",
    "find_flags",
    "is_yes",
    "load_fixed_rules",
    "load_rules",
    "normalise",
    "parse_age",
    "parse_duration_days",
]

import re
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

RULES_FILE = Path(__file__).with_name("triage_rules.yaml")
FIXED_RULES_FILE = Path(__file__).with_name("triage_rules_fixed.yaml")
LEVELS: tuple[str, ...] = ("self_care", "gp", "urgent", "emergency")
Level = Literal["self_care", "gp", "urgent", "emergency"]

_NEGATION = re.compile(
    r"\b(no|not|never|nope|without|none|nothing|neither|nor|isnt|arent|dont|doesnt|didnt|havent|hasnt|wasnt|"
    r"werent|wont)\b"
)
_CLAUSE_BREAK = re.compile(r"[.!?;:]|\bbut\b|\band\b|\balthough\b|\bthough\b")
_YES = re.compile(
    r"^(yes|yeah|yep|yup|yea|ya|sort of|kind of|i think so|a bit|a little|slightly|definitely)\b"
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Flag(_Model):
    """A phrase that, said by the user and not negated, raises the triage level to at least `level`."""

    pattern: str
    level: Level
    reason: str
    _regex: re.Pattern[str] = PrivateAttr()

    def model_post_init(self, __context: object) -> None:
        self._regex = re.compile(self.pattern)

    @property
    def regex(self) -> re.Pattern[str]:
        return self._regex


class Answer(_Model):
    """The level a plain "yes" to a question gives, and why."""

    level: Level
    reason: str


class Question(_Model):
    """One follow-up question and the red flags its answer can reveal."""

    key: str
    text: str
    flags: tuple[Flag, ...] = ()
    if_yes: Answer | None = None
    only_if: Literal["pregnancy_possible", "headache", "rash"] | None = None


class Complaint(_Model):
    """A presenting complaint: how to recognise it, what to ask, and the level when no red flag is found."""

    name: str
    match: str
    baseline: Level
    reason: str
    questions: tuple[Question, ...]
    volunteered: tuple[Flag, ...] = ()
    gp_after_days: float | None = None
    home_advice: str = ""
    watch_for: str = "it gets a lot worse or you notice new symptoms"
    emergency_note: str = ""
    _regex: re.Pattern[str] = PrivateAttr()

    def model_post_init(self, __context: object) -> None:
        self._regex = re.compile(self.match)

    def matches(self, text: str) -> bool:
        return bool(self._regex.search(text))

    @property
    def flags(self) -> tuple[Flag, ...]:
        """Every flag this complaint listens for, asked about or not."""
        return tuple(f for q in self.questions for f in q.flags) + self.volunteered


class Rules(_Model):
    """The whole rule table: shared questions, global red flags, complaints in priority order."""

    levels: tuple[Level, ...]
    global_flags: tuple[Flag, ...]
    questions: dict[str, Question]
    complaints: tuple[Complaint, ...]
    general: Complaint

    @model_validator(mode="before")
    @classmethod
    def _resolve_shared_questions(cls, data: Any) -> Any:
        """Give shared questions their key, and replace a bare name in a complaint by that question."""
        if not isinstance(data, dict):
            return data
        shared = {k: {"key": k, **v} for k, v in (data.get("questions") or {}).items()}
        for complaint in data.get("complaints") or []:
            complaint["questions"] = [shared[q] if isinstance(q, str) else q for q in complaint["questions"]]
        return {**data, "questions": shared}


def _read_yaml(path: Path) -> Any:
    """A YAML file, parsed by libyaml where PyYAML has it (ten times faster than its Python parser: this
    table took 0.14 s of every process that started the bot)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@cache
def load_rules(path: Path = RULES_FILE) -> Rules:
    """Read and validate the rule table (cached: it never changes while the bot runs)."""
    return Rules.model_validate(_read_yaml(path))


@cache
def load_fixed_rules(patch: Path = FIXED_RULES_FILE) -> Rules:
    """The rule table with a patch applied: the patch's `add_questions` appended to the named complaints
    (the fixed variant the matrix demo compares with the original)."""
    data = _read_yaml(RULES_FILE)
    extra = _read_yaml(patch).get("add_questions", {})
    unknown = set(extra) - {c["name"] for c in data["complaints"]}
    if unknown:
        raise ValueError(f"{patch}: add_questions names unknown complaints: {', '.join(sorted(unknown))}")
    for complaint in data["complaints"]:
        complaint["questions"] = [*complaint["questions"], *extra.get(complaint["name"], [])]
    return Rules.model_validate(data)


def normalise(text: str) -> str:
    """Lower-case, apostrophes removed ("Can't" -> "cant"), so patterns need no quote handling."""
    return re.sub(r"['\u2018\u2019`]", "", text.lower()).strip()


def is_yes(answer: str) -> bool:
    """Whether a normalised answer starts with a plain yes."""
    return bool(_YES.match(answer.strip()))


def _negated(text: str, start: int) -> bool:
    clause_start = 0
    for m in _CLAUSE_BREAK.finditer(text, 0, start):
        clause_start = m.end()
    return bool(_NEGATION.search(text[clause_start:start]))


def find_flags(text: str, flags: tuple[Flag, ...]) -> list[Flag]:
    """The flags whose phrase occurs in normalised `text` without a negation before it in the same clause."""
    text = re.sub(r"^(no|nope|yes|yeah)\s*[,.!]\s*", "", text.strip())
    return [f for f in flags if any(not _negated(text, m.start()) for m in f.regex.finditer(text))]


_SMALL = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"),
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_NUMBERS = {w: i for i, w in enumerate(_SMALL)} | {w: 10 * (i + 2) for i, w in enumerate(_TENS)}
_SMALL_RE = "|".join(sorted(_SMALL, key=len, reverse=True))
_NUMBER = rf"\b(\d+(?:\.\d+)?|(?:{'|'.join(_TENS)})(?:[- ](?:{_SMALL_RE}))?|{_SMALL_RE})"
_AGE_YEARS = re.compile(_NUMBER + r"[\s-]*(?:years?|yrs?)[\s-]*old\b|" + _NUMBER + r"\s*(?:yo|y/o)\b")
_AGE_MONTHS = re.compile(_NUMBER + r"[\s-]*(?:months?|weeks?)[\s-]*old\b")
_AGE_STATED = re.compile(r"\b(?:im|i am|hes|shes|he is|she is|aged?)\s+(\d{1,3})\b(?!\s*[a-z%])")
_DURATION = re.compile(
    r"(?:" + _NUMBER + r"|\b(an?|few|couple of|several))\s+"
    r"(minute|min|hour|hr|day|night|week|month|year)s?\b(?!\s*(?:old|late))"
)
_UNIT_DAYS = {
    "minute": 1 / 1440,
    "min": 1 / 1440,
    "hour": 1 / 24,
    "hr": 1 / 24,
    "day": 1,
    "night": 1,
    "week": 7,
    "month": 30,
    "year": 365,
}
_RELATIVE_DAYS = (
    (re.compile(r"since last month"), 30.0),
    (re.compile(r"since last week|last week"), 7.0),
    (re.compile(r"yesterday|last night"), 1.0),
    (re.compile(r"this (morning|afternoon|evening)|today|tonight|earlier|just now"), 0.3),
)


def _to_number(token: str) -> float | None:
    """Parse '52', 'two', 'a', 'twenty-seven' into a number; None when it is not one."""
    token = token.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", token):
        return float(token)
    if token in ("a", "an"):
        return 1.0
    if token in ("few", "couple of", "several"):
        return 3.0 if token != "couple of" else 2.0
    total = 0
    for part in re.split(r"[- ]", token):
        if part not in _WORD_NUMBERS:
            return None
        total += _WORD_NUMBERS[part]
    return float(total)


def parse_age(text: str, answering_age: bool = False) -> float | None:
    """An age in years from free text ('52 years old', '8-year-old', '6 months old', 'I'm 74')."""
    for m in _AGE_MONTHS.finditer(text):
        n = _to_number(m.group(1))
        if n is not None:
            return n / (52 if "week" in m.group(0) else 12)
    for m in _AGE_YEARS.finditer(text):
        n = _to_number(m.group(1) or m.group(2))
        if n is not None:
            return n
    stated = _AGE_STATED.search(text)
    if stated:
        return float(stated.group(1))
    bare = re.fullmatch(r"\D*?(\d{1,3})\D*", text) if answering_age else None
    if bare:
        return float(bare.group(1))
    return None


def parse_duration_days(text: str) -> float | None:
    """How long a symptom has lasted, in days, from free text ('for three weeks', 'an hour ago')."""
    m = _DURATION.search(text)
    if m:
        n = _to_number(m.group(1) or m.group(2))
        if n is not None:
            return n * _UNIT_DAYS[m.group(3)]
    for pattern, days in _RELATIVE_DAYS:
        if pattern.search(text):
            return days
    return None
