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
from simulator.record.redact import CREDENTIAL_HINT, CREDENTIALS, credential_placeholder
from simulator.record.secret_keys import redact_mapping, without_secret_pairs

_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
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
_CANDIDATE = re.compile(rf"[\d@]|{CREDENTIAL_HINT}")
MEMO_PIECES = 8192
MEMO_PIECE_CHARS = 4096


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
        trusted = "|".join(
            f"(?P<_r{len(rules) + i}>(?i:{BUILTIN[label]}))" for i, label in enumerate(builtin or [])
        )
        self.builtin = re.compile(trusted) if builtin else None
        self.counts: Counter[str] = Counter()
        self._tally = self.counts  # where `_replace` counts (a piece's own tally while it is remembered)
        self._memo: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {}
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
        if self.pattern is not None:
            text = self.pattern.sub(self._replace, text)
        if self.builtin is not None:
            if '"' not in text:
                text = self._piece(text)
            else:
                text = '"'.join([self._piece(p) if p else p for p in text.split('"')])
        # A value under a credential's name (`"password": "x"`, record/secret_keys.py), across the quotes.
        return without_secret_pairs(text, self._named)

    def _count_named(self, label: str, _secret: str) -> None:
        self.counts[label] += 1

    def _piece(self, piece: str) -> str:
        """The built-ins applied to a piece holding no quote, remembered with what they counted: a message
        repeated in every later call's history costs a look-up, not another search."""
        assert self.builtin is not None
        found = self._memo.get(piece)
        if found is None:
            if _CANDIDATE.search(piece) is None:
                found = (piece, ())
            else:
                self._tally = Counter()
                try:
                    found = (self.builtin.sub(self._replace, piece), tuple(self._tally.items()))
                finally:
                    self._tally = self.counts
            if len(piece) <= MEMO_PIECE_CHARS:
                if len(self._memo) >= MEMO_PIECES:
                    del self._memo[next(iter(self._memo))]  # the oldest
                self._memo[piece] = found
        for label, count in found[1]:
            self.counts[label] += count
        return found[0]

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
