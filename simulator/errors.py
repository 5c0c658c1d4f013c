"""Errors a user can fix: printed as one clear line each, never as a traceback, exit code 2."""

from __future__ import annotations

__all__ = [
    "PATTERN_WORDS",
    "FieldProblem",
    "FolderTaken",
    "Problem",
    "UserError",
    "decode_error_in_words",
    "error_loc",
    "in_both",
    "json_in_words",
    "option_forms",
    "pattern_or_message",
    "shown_input",
]

import datetime
import json
import re
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


def pattern_or_message(error: Any) -> str:
    """A pydantic error's message in words a user reads: a pattern it failed (`String should match pattern
    '^[\\w.-]+$'`) as what it asks for (`should be letters, digits ...`), a list or text too short
    (`should not be empty: give at least one item`), broken JSON without the parser's positions."""
    kind = error.get("type")
    if kind == "string_pattern_mismatch":
        words = PATTERN_WORDS.get(str((error.get("ctx") or {}).get("pattern")))
        if words is not None:
            return f"should be {words}"
    if kind in ("too_short", "string_too_short"):
        return _too_short(error)
    if kind == "json_invalid":
        return "not valid JSON: " + json_in_words(str((error.get("ctx") or {}).get("error", "")))
    return str(error["msg"])
