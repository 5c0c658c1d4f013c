"""Errors a user can fix: printed as one clear line each, never as a traceback, exit code 2."""

from __future__ import annotations

__all__ = [
    "PATTERN_WORDS",
    "FieldProblem",
    "FolderTaken",
    "Problem",
    "UserError",
    "choices_of",
    "decode_error_in_words",
    "did_you_mean",
    "error_loc",
    "field_path",
    "hint_then",
    "in_both",
    "json_in_words",
    "option_forms",
    "pattern_or_message",
    "shown_input",
]

import datetime
import difflib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from simulator.plural import plural
from simulator.visible import visible


@dataclass(frozen=True)
class Problem:
    """One thing wrong in one input file: where it is and how to fix it."""

    file: str
    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" [{self.field}]" if self.field else ""
        # A value quoted from a file can hold a newline, a terminal escape or a bidi override: shown as
        # escapes, so the problem stays on one line and reads in the order it was written.
        return visible(f"{where}{field}: {self.message}", keep_newlines=False)


class UserError(Exception):
    """A mistake in the user's input or configuration; the CLI prints it without a traceback and exits 2."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []

    def __str__(self) -> str:
        """One line: the headline and, when there are problems, the first (a Python caller's traceback, a
        bot's start error and the desk's runs page show this; it names the file, the field and the fix)."""
        if not self.problems:
            return self.message
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"{self.message}: {self.problems[0]}{more}"

    def render(self) -> str:
        """Every problem, one a line, under the headline (the command line prints this)."""
        if not self.problems:
            return self.message
        lines = [f"{self.message} ({plural(len(self.problems), 'problem')}):"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)


def in_both(command_line: str, python: str) -> str:
    """What to write, in a message both the command line and the Python API reach, in both forms:
    `--max-errors 2, or RunOptions(max_errors=2) in Python`. The one home of those words."""
    return f"{command_line}, or {python} in Python"


def option_forms(key: str, value: str = "") -> str:
    """A run's option `key` (`judge_model`) as both forms name it: `--judge-model, or judge_model= in
    Python`; with `value`, `--out runs/a, or out='runs/a' in Python`."""
    flag = "--" + key.replace("_", "-")
    if not value:
        return in_both(flag, f"{key}=")
    return in_both(f"{flag} {value}", f"{key}={value!r}")


class FolderTaken(UserError):
    """A new run (or matrix) was to be made in a folder that holds one. The one home of the fix's words: the
    command line's (`--resume`, `--out`) as the message, Python's (`out=`, `simulator.resume`) from
    `in_python`, which `simulator.run` and `compare` raise instead."""

    def __init__(self, path: Any, what: str) -> None:
        super().__init__(f"{path} already holds {what}; use --resume {path} to finish it, or another --out")
        self.path = path
        self.what = what

    def in_python(self, finishable: bool) -> UserError:
        """`finishable`: whether `simulator.resume` can finish what is there (never advice that raises)."""
        finish = f", or finish the one there with simulator.resume({str(self.path)!r})" if finishable else ""
        return UserError(f"{self.path} already holds {self.what}; pass another out= for this run{finish}")


class FieldProblem(ValueError):
    """A model validator's problem with one field of its model (`key_facts` past the facts, `critical` not a
    level): `loc` is that field's path inside the model (`"key_facts", 1`), so the problem names its line
    and field, where pydantic places a model validator's error at the model (line 1 of a file). With no
    `loc` it concerns the model as a whole (a field that is missing among several that may be given)."""

    def __init__(self, message: str, *loc: str | int) -> None:
        super().__init__(message)
        self.loc = loc


def error_loc(error: Any) -> tuple[str | int, ...]:
    """Where a pydantic error is: its `loc`, and within it the field a FieldProblem names. The one reading of
    an error's place, for files (config/yamlfile.py) and built models (models.py) alike."""
    raised = (error.get("ctx") or {}).get("error")
    inner = raised.loc if isinstance(raised, FieldProblem) else ()
    return (*error["loc"], *inner)


def field_path(loc: Iterable[str | int], *, python: bool = False) -> str:
    """Where a field is, as every message shows it: its keys joined by '.', and an item of a list counted
    from 1, as a person counts, after its list's name (`tags[1]` is the first tag, `facts[2]` the second
    fact, `hazards[1].controls[2].id`). The one spelling of a place in a file, a run record or a call.
    `python`: a list the caller built in Python code, shown by its Python index (`scenarios[0]` is the
    first), as the caller's own code names it."""
    text = ""
    first = 0 if python else 1
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            text += f"[{part + first}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def shown_input(value: Any, *, limit: int = 60, yaml: bool = True) -> str:
    """A value a file or a call gave, as its writer wrote it, for `(got ...)` in a problem: a mapping or a
    list by its kind only; from a file (`yaml`), in YAML's words (`true`, `null`, a date as written), never
    Python's (`True`, `None`, `datetime.date(2026, 1, 1)`), and a scalar YAML did not read as text says how
    to make it text; from Python, as Python writes it."""
    if isinstance(value, dict):
        return "a mapping" if yaml else "a dict"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, set | frozenset):
        return "a set"
    if not yaml:
        return repr(value)[:limit]
    if isinstance(value, bool):
        return f"{str(value).lower()}: YAML reads yes, no, on, off, true and false as a boolean; quote it for text"
    if value is None:
        return "null, an empty value"
    if isinstance(value, datetime.date):  # datetime too
        return f"{value.isoformat()}: YAML reads an unquoted date as a date; quote it for text"
    if isinstance(value, bytes | bytearray):
        return "binary data"
    return repr(value)[:limit]


# What each pattern a field must match asks for, in words: a person writing a scenario reads "letters,
# digits ..." where pydantic would print the regular expression. Every pattern of every model has its words
# here (tests/test_pattern_words.py walks them all); a new one without words fails that test.
PATTERN_WORDS: dict[str, str] = {
    r"^(sha256:)?[0-9a-f]{64}$": "a SHA-256 digest: 64 lowercase hex digits, with or without 'sha256:' before",
    r"^LLM(0[1-9]|10)$": "an OWASP Top 10 for LLM applications id, LLM01 to LLM10",
    r"^[A-Z]{2}$": "a two-letter country code in capitals, like GB",
    r"^[A-Za-z0-9][A-Za-z0-9_-]*$": "letters, digits, '_' and '-', starting with a letter or a digit, no spaces",
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,59}$": (
        "at most 60 letters, digits, '_', '.' and '-', starting with a letter or a digit, no spaces"
    ),
    r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$": (
        "letters, digits, '_', '.' and '-', starting with a letter or a digit, no spaces"
    ),
    r"^[\w+-]+$": "letters, digits, '_', '+' and '-', no spaces (an espeak-ng voice, like en-us+klatt2)",
    r"^[\w.-]+$": "letters, digits, '_', '.' and '-', no spaces",
    r"^[\w.-]+:.+$": "a provider and a model, like openai:gpt-4.1-mini",
    r"^[\w.:-]+$": "letters, digits, '_', '.', ':' and '-', no spaces",
    r"^[\w.]+:[\w.]+$": "a module and a name in it, like my_bot:make_bot (no spaces)",
    r"^[^.]+\.[^.]+(\.[^.]+)*$": "a tool's name and the argument, like book_appointment.urgency",
    r"^[^\s#/\\\x00-\x1f\x7f-\x9f\xad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]+$": (
        "one word: no spaces, no '#', no '/' or '\\', and no control or invisible characters (a zero-width "
        "space, a soft hyphen, a bidi mark)"
    ),
    r"^[a-z0-9][a-z0-9_-]*$": "lowercase letters, digits, '_' and '-', starting with a letter or a digit",
    r"^[a-z][a-z0-9_-]*$": "lowercase letters, digits, '_' and '-', starting with a letter",
    r"^\d+$": "digits only",
    r"^https?://": "a URL starting with http:// or https://",
    r"^wss?://": "a URL starting with ws:// or wss://",
}


# What a JSON parser's complaint means, in words (its own text names a line and column of its own).
_JSON_WORDS = (
    (("eof", "unterminated", "unexpected end"), "it ends before the record does (cut short?)"),
    (("control character",), "a raw control character (a tab or a line break) inside a string"),
    (("extra data", "trailing characters"), "more than one JSON value"),
    (
        ("expecting value", "expected value", "expected ident"),
        "text where a JSON value should be (not JSON at all?)",
    ),
    (("expecting", "expected"), "a comma, colon, quote or bracket is missing"),
)


def json_in_words(parser_message: str) -> str:
    """Why a JSON parser refused some text, in words and without its positions (the caller names the file
    and line): `it ends before the record does (cut short?)`; `its syntax is broken` when not known."""
    lowered = parser_message.lower()
    at = re.search(r"line (\d+) column 0\b", lowered)
    if "control character" in lowered and at and int(at.group(1)) > 1:
        lowered = "eof"  # the control character is the line break: the record ends inside a string
    for needles, words in _JSON_WORDS:
        if any(n in lowered for n in needles):
            return words
    return "its syntax is broken"


def decode_error_in_words(exc: json.JSONDecodeError) -> str:
    """`json_in_words` for the standard library's error, which knows where the text ended: an error at
    its end is text cut short, whatever the parser expected next."""
    return json_in_words("eof" if exc.pos >= len(exc.doc.rstrip()) else exc.msg)


def _too_short(error: Any) -> str:
    least = (error.get("ctx") or {}).get("min_length", 1)
    if error.get("type") == "string_too_short":
        return "should not be empty" if least == 1 else f"should be at least {least} characters"
    return (
        "should not be empty: give at least one item" if least == 1 else f"should have at least {least} items"
    )


# What each kind of pydantic error asks for, in words (pydantic's own, `Input should be a valid dictionary or
# instance of ScenarioSelection`, names a Python class and says "input"); `{name}` is the error's context.
_TYPE_WORDS: dict[str, str] = {
    "string_type": "should be text",
    "string_unicode": "should be text",
    "bytes_type": "should be text",
    "int_type": "should be a whole number",
    "int_parsing": "should be a whole number",
    "int_parsing_size": "should be a smaller whole number",
    "int_from_float": "should be a whole number, not a fraction",
    "float_type": "should be a number",
    "float_parsing": "should be a number",
    "finite_number": "should be a finite number, not infinity or NaN",
    "bool_type": "should be true or false",
    "bool_parsing": "should be true or false",
    "list_type": "should be a list, such as [a, b]",
    "tuple_type": "should be a list, such as [a, b]",
    "set_type": "should be a list, such as [a, b]",
    "frozen_set_type": "should be a list, such as [a, b]",
    "dict_type": "should be a mapping",
    "model_type": "should be a mapping",
    "model_attributes_type": "should be a mapping",
    "dataclass_type": "should be a mapping",
    "literal_error": "should be one of {expected}",
    "enum": "should be one of {expected}",
    "greater_than": "should be more than {gt}",
    "greater_than_equal": "should be at least {ge}",
    "less_than": "should be less than {lt}",
    "less_than_equal": "should be at most {le}",
    "multiple_of": "should be a multiple of {multiple_of}",
    "string_too_long": "should be at most {max_length} characters",
    "too_long": "should have at most {max_length} items",
    "none_required": "should be left empty",
    "missing": "is missing; add it",
    "extra_forbidden": "is not a field here; remove it or check its spelling",
    "date_type": "should be a date, like 2026-01-31",
    "date_parsing": "should be a date, like 2026-01-31",
    "date_from_datetime_parsing": "should be a date, like 2026-01-31",
    "datetime_type": "should be a date and time, like 2026-01-31T09:30:00",
    "datetime_parsing": "should be a date and time, like 2026-01-31T09:30:00",
    "datetime_from_date_parsing": "should be a date and time, like 2026-01-31T09:30:00",
    "url_type": "should be a URL, like https://example.org",
    "url_parsing": "should be a URL, like https://example.org",
    "url_scheme": "should be a URL starting with {expected_schemes}",
}


def pattern_or_message(error: Any) -> str:
    """A pydantic error's message in words a user reads, never pydantic's own (`Input should be ...`): a
    pattern it failed (`String should match pattern '^[\\w.-]+$'`) as what it asks for (`should be letters,
    digits ...`), a list or text too short (`should not be empty: give at least one item`), a type or a bound
    as `should be a whole number`, `should be at least 1`, broken JSON without the parser's positions; a
    validator's own message as it wrote it."""
    kind = error.get("type")
    ctx = error.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        words = PATTERN_WORDS.get(str(ctx.get("pattern")))
        if words is not None:
            return f"should be {words}"
    if kind in ("too_short", "string_too_short"):
        return _too_short(error)
    if kind == "json_invalid":
        return "not valid JSON: " + json_in_words(str(ctx.get("error", "")))
    words = _TYPE_WORDS.get(str(kind))
    if words is not None:
        try:
            return words.format(**ctx)
        except (KeyError, IndexError, ValueError):
            pass  # a context pydantic words otherwise: its own message below
    return str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")


def choices_of(error: Any) -> list[str]:
    """The values a `literal_error` or `enum` error allows, as text (`'critical', 'major' or 'minor'`)."""
    if error.get("type") not in ("literal_error", "enum"):
        return []
    return re.findall(r"'((?:[^'\\]|\\.)*)'", str((error.get("ctx") or {}).get("expected", "")))


# Letters of other scripts drawn like Latin ones: a key or a value typed with one (a Cyrillic `а` in `nаme`,
# pasted from a document or typed on a Cyrillic keyboard) looks right and matches nothing.
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕһԁԛԝӏАВЕКМНОРСТХІЈЅУοαρνικυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijshdqwlABEKMHOPCTXIJSYoapvikuABEZHIKMNOPTYX",
)


def _skeleton(text: str) -> str:
    """`text` as it looks: compatibility forms folded (fullwidth `ｐ` is `p`), look-alike letters made Latin,
    invisible characters (a zero-width space, a soft hyphen) dropped."""
    folded = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES)
    return "".join(char for char in folded if unicodedata.category(char) != "Cf")


def _odd_characters(text: str) -> str:
    """The characters of `text` that are not what they look like, each named with its code point."""
    odd = []
    for char in dict.fromkeys(text):
        if char.isascii() and char.isprintable():
            continue
        name = unicodedata.name(char, "").title() or "an invisible character"
        odd.append(
            f"'{char}' (U+{ord(char):04X}, {name})" if char.isprintable() else f"U+{ord(char):04X} ({name})"
        )
    return ", ".join(odd)


def _lookalike(given: str, allowed: Iterable[str]) -> str | None:
    """When `given` only looks like one of `allowed` (a Cyrillic or Greek letter, a fullwidth form or an
    invisible character in it), which characters are not what they look like and what to type; else None."""
    looks = _skeleton(given)
    if looks == given or looks not in [str(name) for name in allowed]:
        return None
    return f"'{given}' looks like '{looks}' but has {_odd_characters(given)} in it; retype it as '{looks}'"


# Other tools' words for ours, where spelling alone guesses wrong (`repeats` is closer in letters to
# `relations` than to `runs`): used only when the word they point to is one of the names allowed there.
_OTHER_WORDS = {
    "repeats": "runs",
    "repeat": "runs",
    "repetitions": "runs",
    "n_runs": "runs",
    "num_runs": "runs",
    "trials": "runs",
    "iterations": "runs",
    "turns": "max_turns",
    "turn_limit": "max_turns",
    "max_turn": "max_turns",
    "rubric": "criteria",
    "criterion": "criteria",
}


def _bare(text: str) -> str:
    """`text` as a name is compared for a suggestion: as it looks, in any case, `-` and spaces as `_`."""
    return re.sub(r"[-\s]", "_", _skeleton(text).casefold())


def _closest(given: Any, allowed: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The one of `allowed` that `given` was meant to be: the same but for look-alike letters (a Cyrillic or
    Greek letter, a fullwidth form, an invisible character), case or separators (`Under-Triage` for
    `under_triage`); another tool's word for it (`repeats` for `runs`); else the closest in spelling, at
    least `cutoff` alike (difflib's ratio). None when nothing is close. The one guess of every suggestion."""
    names = [str(name) for name in allowed]
    text = str(given)
    looks = _skeleton(text)
    if looks in names:
        return looks
    bare = {_bare(name): name for name in reversed(names)}  # the first of two that differ only so
    if _bare(text) in bare:
        return bare[_bare(text)]
    meant = _OTHER_WORDS.get(_bare(text))
    if meant is not None:  # another tool's word: ours, or no guess (its letters would guess wrong)
        return meant if meant in names else None
    close = difflib.get_close_matches(looks, names, n=1, cutoff=cutoff)
    if not close:  # a near miss in other capitals (`EMERGNCY`)
        folded = {name.casefold(): name for name in reversed(names)}
        close = [
            folded[c] for c in difflib.get_close_matches(looks.casefold(), list(folded), n=1, cutoff=cutoff)
        ]
    return close[0] if close else None


def did_you_mean(given: Any, allowed: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """How to fix a name (a key, a choice, a level) that is none of `allowed`: `did you mean 'major'?`; when
    it only looks like one of them (a Cyrillic or Greek letter, a fullwidth form or an invisible character
    in it), which character is not what it looks like. None when nothing is close (`_closest`)."""
    names = [str(name) for name in allowed]
    same = _lookalike(str(given), names)
    if same is not None:
        return same
    meant = _closest(given, names, cutoff=cutoff)
    return f"did you mean '{meant}'?" if meant is not None else None


def hint_then(hint: str | None) -> str:
    """A `did_you_mean` hint with more of its message after it: `did you mean 'x'? ` (a question ends
    itself), `... retype it as 'x'; ` otherwise; nothing when there is no hint."""
    if not hint:
        return ""
    return f"{hint} " if hint.endswith("?") else f"{hint}; "
