"""Redaction on import: personal data replaced by a placeholder before anything is written, and counted.

Built-in patterns: email, phone, NHS number (ten digits passing the modulus-11 check), SSN-style number
(3-2-4 digits), date (dates of birth and any other calendar date: dd/mm/yyyy, yyyy-mm-dd, 3 March 1971),
plus names from a list and extra patterns from the redaction file. Patterns catch formats, not meaning:
a name not on the list, or an identifier in an unusual format, is not caught (docs/traces.md). And always,
whatever the redaction file or --no-redact say, well-known credential formats (API keys, tokens, private
keys, a password after "password is"; record/redact.py `CREDENTIAL_FORMATS`), and a value under a key that
names a credential (`{"password": "x"}`, `api_key=x`; record/secret_keys.py): no secret is ever written.
"""

from __future__ import annotations

__all__ = ["Redactor", "load_redactor"]

import itertools
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from simulator.config.patterns import compile_pattern
from simulator.config.yamlfile import YAMLProblem, load_model_file, read_text_file
from simulator.errors import UserError
from simulator.models import StrictModel, empty_dict, empty_list
from simulator.readers import missing
from simulator.record.redact import (
    CREDENTIAL_START,
    CREDENTIALS,
    credential_placeholder,
    may_hold_credential,
)
from simulator.record.secret_keys import redact_mapping, without_secret_pairs

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec")
_MONTHS = rf"(?:{'|'.join(_MONTH_NAMES)})[a-z]*"
BUILTIN: dict[str, str] = {
    # Starts only where a run of address characters starts: without the lookbehind, `a` * 1,000,000 is
    # scanned to its end from each of its million starts (quadratic).
    "email": r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    "nhs_number": r"(?<!\d)\d{3}[ -]?\d{3}[ -]?\d{4}(?!\d)",
    "ssn": r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)",
    "date": (
        r"(?<!\d)(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})|\d{4}-\d{2}-\d{2}"
        rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}\s+\d{{4}}|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})(?!\d)"
    ),
    "phone": r"(?<![\w])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,5}\)[\s.-]?)?\d{2,5}(?:[\s.-]?\d{2,4}){2,3}(?!\d)",
}
ORDER = ["email", "ssn", "date", "nhs_number", "phone"]
# The credentials (record/redact.py, which run records use too): always on, whatever the redaction file says,
# and tried before the personal-data patterns.
BUILTIN.update(CREDENTIALS)
_PHONE = re.compile(BUILTIN["phone"])
# Every built-in match holds a digit, an `@` or a credential's fixed part, and none holds a double quote; at
# a quote every look-behind and look-ahead of theirs passes, as at the start or end of a text. So the
# built-ins may run on the pieces of a text between its quotes, skipping a piece with none, with exactly
# the same result:
# a GenAI attribute is JSON whose keys and structure are skipped, and whose message texts, repeated in every
# later call's history, are redacted once (MEMO_PIECES remembered) instead of once per span.
# And each built-in is of a kind whose every match holds something of its own and starts where a look-ahead
# says: a credential starts at its fixed part or name (`may_hold_credential`, `CREDENTIAL_START`,
# record/redact.py); an email holds an `@`, and starts anywhere; a number or a date holds a digit (`\d`, as
# their patterns read it) and starts at a digit, a `+` or a `(`, or, for a date written month first, at a
# month's first letter (`month`: only where the piece names a month). A piece is searched with the kinds it
# holds only, each behind its look-ahead (`Redactor._searched_with`): the same matches in the same order,
# without every pattern tried at every position (a user's message with a number in it: 4-10 times faster).
_KIND = {"email": "email", "ssn": "number", "date": "number", "nhs_number": "number", "phone": "number"}
_DIGIT = re.compile(r"\d")
_HOLDS: dict[str, Callable[[str], object]] = {
    "credential": may_hold_credential,
    "email": lambda piece: "@" in piece,
    "number": _DIGIT.search,
}
_STARTS = {
    "credential": CREDENTIAL_START,
    "email": "",
    "number": r"(?=[\d+(])",
    "month": r"(?i:(?=[\d+(jfmasond]))",
}
# A month named, looked for in the casefolded piece: `(?i:` takes `ſ` for `s` (the only letter outside ASCII
# it takes for one of theirs), as casefolding does, so every piece the dates' month names match is found.
_NAMES_A_MONTH = re.compile("|".join(_MONTH_NAMES))
_PLAIN = {"email": "@", "number": r"\d"}  # the kinds held by one character, as a character class has it
_PLAIN_KINDS = tuple(_PLAIN)
MEMO_PIECES = 8192
MEMO_PIECE_CHARS = 4096
# Short texts remembered whole (attribute names, ids, models, short values), each with what it counted.
MEMO_TEXTS = 4096
MEMO_TEXT_CHARS = 256
Tally = tuple[tuple[str, int], ...]  # what redacting a text counted, by label


def _nhs_valid(text: str) -> bool:
    """The NHS number's modulus-11 check digit: most random ten-digit numbers (phones) fail it."""
    digits = [int(c) for c in text if c.isdigit()]
    if len(digits) != 10:
        return False
    check = 11 - sum(d * w for d, w in zip(digits[:9], range(10, 1, -1), strict=True)) % 11
    return (0 if check == 11 else check) == digits[9] and check != 10


class RedactionConfig(StrictModel):
    """The redaction file: which built-in patterns to use, names to remove, extra patterns by label."""

    patterns: list[str] = Field(default_factory=lambda: list(ORDER))
    names: list[str] = Field(default_factory=empty_list)
    names_file: str | None = None
    custom: dict[str, str] = Field(default_factory=empty_dict)


class Redactor:
    """Replaces matches with `[LABEL]` in every string of a value, counting what it replaced per label.

    Two passes. The user's rules (custom patterns, then names; label, regular expression) are tried in
    order at each position, bounded by the time limit of every user pattern (config/patterns.py), which
    names them if they hit it. Then the built-ins, which are ours and linear in the text (no nested
    repetition, no unanchored scan to the end): they run unbounded, so 1 MB of ordinary text never times
    out on a busy machine, and a user is never told to simplify a pattern they did not write."""

    def __init__(self, rules: list[tuple[str, str]], builtin: list[str] | None = None) -> None:
        self.labels = [label for label, _ in rules] + list(builtin or [])
        alternatives = "|".join(f"(?P<_r{i}>{regex})" for i, (_, regex) in enumerate(rules))
        field = "redaction rules " + ", ".join(label for label, _ in rules)
        self.pattern = compile_pattern(alternatives, field, ignore_case=False) if rules else None
        # Each built-in as its named group, with its kind (`_KIND`, else a credential): a piece is searched
        # with the groups of the kinds it holds, in this order (`_searched_with`).
        self._groups = [
            (_KIND.get(label, "credential"), f"(?P<_r{len(rules) + i}>(?i:{BUILTIN[label]}))")
            for i, label in enumerate(builtin or [])
        ]
        self._holds = [
            (kind, _HOLDS[kind]) for kind in _HOLDS if any(held == kind for held, _ in self._groups)
        ]
        self._alternations: dict[tuple[str, ...], re.Pattern[str]] = {}
        plain = "".join(_PLAIN[kind] for kind, _ in self._holds if kind in _PLAIN)
        self._plain = re.compile(f"[{plain}]") if plain else None
        self.builtin = re.compile("|".join(group for _, group in self._groups)) if builtin else None
        self.counts: Counter[str] = Counter()
        self._tally = self.counts  # where `_replace` counts (a piece's own tally while it is remembered)
        self._memo: dict[str, tuple[str, Tally]] = {}  # pieces (`_piece`)
        self._texts: dict[str, tuple[str, Tally]] = {}  # short texts (`text`)
        # Bound once: a method looked up for each string is an object made for each (and collected).
        self._named: Callable[[str, str], None] = self._count_named

    @classmethod
    def from_config(cls, config: RedactionConfig, names: list[str]) -> Redactor:
        rules = list(config.custom.items())
        if names:
            alternatives = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
            rules.append(("name", rf"(?i:\b(?:{alternatives})\b)"))
        return cls(rules, [*CREDENTIALS, *(label for label in ORDER if label in config.patterns)])

    def text(self, text: str) -> str:
        if len(text) <= MEMO_TEXT_CHARS:  # names, ids, short values: the same few in every span
            found = self._texts.get(text)
            if found is not None and not found[1]:  # met before, and nothing to count
                return found[0]
            return self._remembered(self._texts, MEMO_TEXTS, text, self._text)
        return self._text(text)

    def _text(self, text: str) -> str:
        if self.pattern is not None:
            text = self.pattern.sub(self._replace, text)
        if self.builtin is not None:
            if '"' not in text:
                text = self._piece(text)
            elif may_hold_credential(text):
                text = '"'.join([self._piece(p) if p else p for p in text.split('"')])
            else:
                text = self._pieces(text)
        # A value under a credential's name (`"password": "x"`, record/secret_keys.py), across the quotes.
        return without_secret_pairs(text, self._named)

    def _remembered(
        self, memo: dict[str, tuple[str, Tally]], size: int, text: str, work: Callable[[str], str]
    ) -> str:
        """`work(text)`, remembered in `memo` (at most `size` texts, the oldest dropped) with what it counted,
        which is counted again at each use: a text met again costs a look-up, and counts as it did."""
        found = memo.get(text)
        if found is None:
            outer, self._tally = self._tally, Counter()
            try:
                found = (work(text), tuple(self._tally.items()))
            finally:
                self._tally = outer
            if (
                len(text) <= MEMO_PIECE_CHARS
            ):  # a longer piece is searched each time, as it is rarely met again
                if len(memo) >= size:
                    del memo[next(iter(memo))]  # the oldest
                memo[text] = found
        for label, count in found[1]:
            self._tally[label] += count
        return found[0]

    def _pieces(self, text: str) -> str:
        """`_piece` applied to each piece of `text` between its quotes, for a text holding no credential's
        start (`may_hold_credential`): only the pieces holding a character another built-in's match needs
        (`_plain`: an `@`, a digit) are looked at, the rest copied as they are, so a GenAI attribute's keys
        and structure cost one search between them. (Neither character is a quote: each lies in one piece.)"""
        if self._plain is None:
            return text
        out, end, find = [], 0, self._plain.search
        while (found := find(text, end)) is not None:
            start = text.rfind('"', 0, found.start()) + 1
            stop = text.find('"', found.end())
            stop = len(text) if stop < 0 else stop
            piece = self._remembered(self._memo, MEMO_PIECES, text[start:stop], self._searched_plain)
            out += [text[end:start], piece]
            end = stop
        if not out:
            return text
        out.append(text[end:])
        return "".join(out)

    def _count_named(self, label: str, _secret: str) -> None:
        self._tally[label] += 1

    def _piece(self, piece: str) -> str:
        """The built-ins applied to a piece holding no quote, remembered with what they counted: a message
        repeated in every later call's history costs a look-up, not another search."""
        return self._remembered(self._memo, MEMO_PIECES, piece, self._searched)

    def _searched(self, piece: str, kinds: tuple[str, ...] | None = None) -> str:
        """The built-ins applied to a piece, searched for the kinds it holds (of `kinds`, when the text it
        came from rules some out)."""
        held = tuple(kind for kind, holds in self._holds if (kinds is None or kind in kinds) and holds(piece))
        if not held:
            return piece
        if "number" in held and _NAMES_A_MONTH.search(piece.casefold()) is not None:
            held += ("month",)
        return self._searched_with(held).sub(self._replace, piece)

    def _searched_plain(self, piece: str) -> str:
        """`_searched` for a piece of a text holding no credential's start (`_pieces`)."""
        return self._searched(piece, _PLAIN_KINDS)

    def _searched_with(self, held: tuple[str, ...]) -> re.Pattern[str]:
        """The built-ins of the `held` kinds (same names, same order), each run of one kind behind the
        look-ahead of where its matches start (`_STARTS`): the others cannot match in a piece without
        their character, and none of these where its look-ahead fails."""
        pattern = self._alternations.get(held)
        if pattern is None:
            runs = [
                (kind, [group for _, group in run])
                for kind, run in itertools.groupby(self._groups, key=lambda group: group[0])
                if kind in held
            ]
            pattern = self._alternations[held] = re.compile(
                "|".join(
                    f"{_start(kind, held)}(?:{'|'.join(groups)})" if _start(kind, held) else "|".join(groups)
                    for kind, groups in runs
                )
            )
        return pattern

    def _replace(self, match: Any) -> str:
        label = self.labels[int(str(match.lastgroup)[2:])]
        if label in CREDENTIALS:  # `password is [PASSWORD]`, `Bearer [TOKEN]`: the name is kept
            self._tally[label] += 1
            return credential_placeholder(label, match.group(0))
        if label == "nhs_number" and not _nhs_valid(match.group(0)):
            # Ten digits failing the NHS check digit: a phone number, when phones are redacted.
            if "phone" not in self.labels or not _PHONE.fullmatch(match.group(0)):
                return match.group(0)
            label = "phone"
        self._tally[label] += 1
        return f"[{label.upper()}]"

    def value(self, value: Any) -> Any:
        """`value` with every string in it (dict keys and values, list items) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):  # a value under a credential's name replaced whole
            return redact_mapping(value, self.value, self._named)
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def _start(kind: str, held: tuple[str, ...]) -> str:
    """The look-ahead where a match of `kind` starts, in a piece holding the `held` kinds."""
    return _STARTS["month"] if kind == "number" and "month" in held else _STARTS[kind]


def load_redactor(path: Path | None, enabled: bool = True) -> Redactor:
    """The redactor of a redaction file, the built-in patterns when none is given, or none at all."""
    if not enabled:  # no personal-data patterns; credentials are never written
        return Redactor([], list(CREDENTIALS))
    if path is None:
        return Redactor.from_config(RedactionConfig(), [])
    config = load_model_file(
        path,
        RedactionConfig,
        title="invalid redaction file",
        missing=f"--redact {path}: no such file; pass a YAML redaction file",
    )
    unknown = [p for p in config.patterns if p not in ORDER and p not in CREDENTIALS]
    if unknown:
        raise UserError(f"{path} [patterns]: unknown pattern {unknown[0]}; known: {', '.join(ORDER)}")
    for label, regex in config.custom.items():
        if not regex.strip():
            raise UserError(
                f"{path} [custom.{label}]: an empty pattern matches everywhere; write the pattern"
            )
        try:
            compile_pattern(regex, f"custom.{label}", ignore_case=False)
        except ValueError as exc:
            raise UserError(f"{path} [custom.{label}]: not a regular expression ({exc})") from None
    blank = [i for i, name in enumerate(config.names) if not name.strip()]
    if blank:  # an empty name matches everywhere: it would rewrite every id and every message
        raise UserError(f"{path} [names.{blank[0]}]: an empty or blank name; remove it or write the name")
    names = [name.strip() for name in config.names]
    if config.names_file:
        names_path = (path.parent / config.names_file).resolve()
        if missing(names_path):
            raise UserError(
                f"{path} [names_file]: {names_path} does not exist; name a text file, one name a line"
            )
        try:
            text = read_text_file(names_path)
        except YAMLProblem as exc:
            raise UserError(f"{path} [names_file]: {exc.problem}") from None
        names += [n.strip() for n in text.splitlines() if n.strip()]
    return Redactor.from_config(config, names)
