"""Distinct, or it does not count: a measurable near-duplicate check between vignettes.

Two vignettes are near-duplicates when what the patient can tell (their facts) is nearly the same set of
clinical content, however the persona is worded: a new vignette that only renames the speaker adds no
evidence. The measure is the Jaccard overlap of the facts' content words (0: nothing shared, 1: the same);
at or above the threshold (default 0.8) a draft is refused, naming the vignette it repeats and the figure.
"""

from __future__ import annotations

__all__ = ["NEAR_DUPLICATE", "nearest", "similarity"]

import re
from collections.abc import Iterable
from typing import Any

NEAR_DUPLICATE = 0.8
_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing clinical: who speaks, how, filler.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "there",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "with",
        "you",
        "your",
        "not",
        "no",
        "just",
        "bit",
        "very",
        "about",
        "been",
        "since",
        "dad",
        "mum",
        "mother",
        "father",
        "son",
        "daughter",
        "wife",
        "husband",
        "partner",
    ]
)


def _content(scenario: Any) -> frozenset[str]:
    words = _WORD.findall(" ".join(scenario.facts).lower())
    return frozenset(w for w in words if w not in _STOP and len(w) > 2)


def similarity(a: Any, b: Any) -> float:
    """The Jaccard overlap of two vignettes' fact content words (1.0: the same clinical content)."""
    left, right = _content(a), _content(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def nearest(candidate: Any, others: Iterable[Any]) -> tuple[Any, float] | None:
    """The vignette among `others` most like `candidate`, with the figure; None when there is none."""
    best: tuple[Any, float] | None = None
    for other in others:
        if other.id == candidate.id:
            continue
        score = similarity(candidate, other)
        if best is None or score > best[1]:
            best = (other, score)
    return best
