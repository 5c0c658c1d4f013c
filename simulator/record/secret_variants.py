"""A secret found however its text was rewritten: the search `record.redact` runs in a normalised view.

The view of a text folds what a bot can change without changing what a key says: NFKC (fullwidth `ｓｋ`),
case, Unicode format characters (zero-width spaces, soft hyphens), whitespace and the usual separators
(`:`, `,`, `;`, `.`, `-`, `_`, backslashes, NUL), and `\\uXXXX`, `\\n`, `\\r`, `\\t` escapes. A secret's
variants are searched there, each in the same view: its body reversed or in ROT13, its hex, base64,
decimal or octal bytes (which the view shows without their separators), and for a long random body any
run of FRAGMENT_CHARS of it (a key split between two messages). `record.redact` decides which variants a
secret has; this module only searches.
"""

from __future__ import annotations

__all__ = ["FRAGMENT_CHARS", "MIN_VARIANT_CHARS", "Variants", "normalised", "secret_body"]

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

import regex

# The shortest body (in the view) whose variants are searched: the exact value is searched from 4
# characters (config.secrets.MIN_SECRET_CHARS), but a variant folds case, order and separators, so a short
# one (`abcd`: `ABCD`, `dcba`, `a-b-c-d`) is everyday text.
MIN_VARIANT_CHARS = 12
# Any run of this many characters of a random body is the secret: 16 characters of a key's alphabet, case
# folded, are more than 80 bits, which no ordinary text holds by chance, and a 32-character token's halves
# are still found. A piece shorter than this is not (docs/records.md).
FRAGMENT_CHARS = 16
_BLOCK = FRAGMENT_CHARS // 2  # any run of 2*_BLOCK - 1 characters holds a whole block at a multiple of it
_MIN_DISTINCT = 8  # a piece of fewer different characters (`zzzz...`, `0101...`) is no evidence

# The prefixes that name a kind of key rather than a key: the body after them is searched alone.
_KNOWN_PREFIX = re.compile(
    r"^(?:sk-(?:proj|svcacct|admin|ant-(?:api|admin|sid)\d\d)-|sk-|[sr]k_(?:live|test)_|gh[oprsu]_"
    r"|github_pat_|glpat-|xox[abeoprs]-|hf_|gsk_|pplx-|nvapi-|r8_)"
)
_ESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|[nrt])")
_DROP = regex.compile(r"[\p{Cf}\p{Z}\s\x00\\:,;.\-_]+")
_DROP_ASCII = bytes(c for c in range(128) if _DROP.fullmatch(chr(c)))


def secret_body(value: str) -> str:
    """`value` without a well-known prefix (`sk-proj-`, `sk-ant-api03-`, `ghp_` ...): its distinctive part."""
    match = _KNOWN_PREFIX.match(value)
    return value[match.end() :] if match else value


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16)) if match.group(1) else ""


def normalised(text: str) -> str:
    """`text` as its variants are searched: escapes decoded, NFKC, case folded, separators dropped."""
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
    if text.isascii():  # NFKC changes no ASCII, and casefold is lower: all in C
        return text.lower().encode("ascii").translate(None, _DROP_ASCII).decode("ascii")
    return _DROP.sub("", unicodedata.normalize("NFKC", text).casefold())


@lru_cache(maxsize=4096)
def _normalised_char(char: str) -> str:
    return _DROP.sub("", unicodedata.normalize("NFKC", char).casefold())


def normalised_with_origins(text: str) -> tuple[str, list[int], list[int]]:
    """`normalised(text)` built unit by unit, with where each of its characters came from in `text` (its
    start and end): what a match is replaced by. It differs from `normalised` only where NFKC joins
    characters (a letter and a combining accent), and the caller then replaces the whole value."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    while i < len(text):
        escape = _ESCAPE.match(text, i) if text[i] == "\\" else None
        end = escape.end() if escape else i + 1
        unit = _normalised_char(_unescape(escape)) if escape else _normalised_char(text[i])
        for char in unit:
            out.append(char)
            starts.append(i)
            ends.append(end)
        i = end
    return "".join(out), starts, ends


class Variants:
    """The variants of the registered secrets, each in the normalised view, and their search: whole forms
    by substring, pieced forms by their blocks of _BLOCK characters, each hit grown to its longest run."""

    def __init__(self) -> None:
        self._whole: set[str] = set()
        self._blocks: dict[str, list[tuple[str, int]]] = {}

    def __bool__(self) -> bool:
        return bool(self._whole or self._blocks)

    def add(self, form: str, *, pieces: bool) -> None:
        """Search `form` (already normalised): whole, or (`pieces`) also any run of FRAGMENT_CHARS of it."""
        if not pieces or len(form) < _BLOCK:
            self._whole.add(form)
            return
        offsets = {*range(0, len(form) - _BLOCK + 1, _BLOCK), len(form) - _BLOCK}
        for offset in sorted(offsets):
            entry = (form, offset)
            found = self._blocks.setdefault(form[offset : offset + _BLOCK], [])
            if entry not in found:
                found.append(entry)

    def clear(self) -> None:
        self._whole.clear()
        self._blocks.clear()

    def found(self, view: str) -> bool:
        """Whether `view` (a normalised text) holds a variant."""
        if any(form in view for form in self._whole):
            return True
        return any(block in view and next(self._runs(view, block), None) for block in self._blocks)

    def runs(self, view: str) -> list[tuple[int, int]]:
        """Where in `view` the variants are: (start, end) pairs, overlapping ones merged."""
        spans = []
        for form in self._whole:
            at = view.find(form)
            while at >= 0:
                spans.append((at, at + len(form)))
                at = view.find(form, at + 1)
        for block in self._blocks:
            if block in view:
                spans.extend(self._runs(view, block))
        merged: list[tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def _runs(self, view: str, block: str) -> Iterator[tuple[int, int]]:
        """The runs around each place `block` sits in `view` that match a form it belongs to: the whole form,
        or FRAGMENT_CHARS and more of it with enough different characters to be no chance."""
        at = view.find(block)
        while at >= 0:
            for form, offset in self._blocks[block]:
                left = 0
                while left < offset and left < at and view[at - left - 1] == form[offset - left - 1]:
                    left += 1
                right = _BLOCK
                while (
                    offset + right < len(form)
                    and at + right < len(view)
                    and view[at + right] == form[offset + right]
                ):
                    right += 1
                start, end = at - left, at + right
                if end - start == len(form) or (
                    end - start >= FRAGMENT_CHARS and len(set(view[start:end])) >= _MIN_DISTINCT
                ):
                    yield start, end
            at = view.find(block, at + 1)
