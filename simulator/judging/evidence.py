"""Check a judge's quotes against the transcript in code: a verdict is only as good as the evidence it can show.

A quote is found when, after normalising case, whitespace, typographic quotes and dashes and HTML
entities, it occurs in the transcript's messages. Light tolerance: a leading speaker label (`BOT:`,
`[3] USER:`) and surrounding quote marks are dropped, edge punctuation of each part is ignored, and an
ellipsis (`...` or `…`) may stand for omitted text, so "call 999 ... chest pain" matches when both parts
occur in that order.
"""

from __future__ import annotations

__all__ = ["evidence_verified", "normalise", "quote_found", "verify_evidence"]

import html
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

from simulator.record.models import Evidence, VerdictResult

_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u02bc": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
    }
)
_LABEL = re.compile(r"^\s*(?:\[\d+\]\s*)?(?:user|bot|assistant|chatbot|customer)\s*:\s*", re.IGNORECASE)
_ELLIPSIS = re.compile(r"\.{3,}|\[\s*\.\.\.\s*\]")
_EDGE = " \t\n.,;:!?\"'()[]"
_QUOTE_MARKS = " \"'"
_MIN_CHARS = 2


@lru_cache(maxsize=16384)  # every verdict on a conversation normalises the same messages again
def normalise(text: str) -> str:
    """Case-folded text with HTML entities decoded, typographic quotes and dashes plain, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", html.unescape(text)).translate(_TYPOGRAPHY).casefold()
    return " ".join(text.split())


def _segments(quote: str) -> list[str]:
    text = _LABEL.sub("", normalise(quote).strip(_QUOTE_MARKS)).strip(_QUOTE_MARKS)
    parts = [part.strip(_EDGE) for part in _ELLIPSIS.split(text)]
    return [part for part in parts if part]


def _haystack(messages: Sequence[str]) -> str:
    return "\n".join(normalise(message) for message in messages)


def _found_in(segments: list[str], haystack: str) -> bool:
    if sum(ch.isalnum() for part in segments for ch in part) < _MIN_CHARS:
        return False  # an empty or one-character quote proves nothing
    position = 0
    for part in segments:
        index = haystack.find(part, position)
        if index < 0:
            return False
        position = index + len(part)
    return True


def quote_found(quote: str, messages: Sequence[str]) -> bool:
    """True when the quote occurs in the messages (normalised, with the light tolerance described above)."""
    return _found_in(_segments(quote), _haystack(messages))


def evidence_verified(result: VerdictResult, evidence: Sequence[Evidence]) -> bool | None:
    """False when a quote is unfound or a pass/fail has no quote at all; None when there is nothing to check."""
    if result in ("pass", "fail") and not evidence:
        return False
    if not evidence:
        return None
    return all(item.found for item in evidence)


def verify_evidence(
    quotes: Sequence[str], messages: Sequence[str], result: VerdictResult
) -> tuple[list[Evidence], bool | None]:
    """Each quote checked against the transcript's messages, and the verdict's `evidence_verified` flag."""
    haystack = _haystack(messages)
    evidence = [Evidence(quote=quote, found=_found_in(_segments(quote), haystack)) for quote in quotes]
    return evidence, evidence_verified(result, evidence)
