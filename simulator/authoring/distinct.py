"""Distinct, or it does not count: a measurable near-duplicate check between vignettes.

Two vignettes are near-duplicates when what the patient can tell (their facts) is nearly the same set of
clinical content, however the persona is worded: a new vignette that only renames the speaker adds no
evidence. The measure is the Jaccard overlap of the facts' content words (`text.content.fact_words`, which
leave out who the patient is to the speaker; 0: nothing shared, 1: the same); at or above the threshold
(default 0.8) a draft is refused, naming the vignette it repeats and the figure.
"""

from __future__ import annotations

__all__ = ["NEAR_DUPLICATE", "nearest", "similarity"]

from collections.abc import Iterable
from typing import Any

from simulator.text.content import fact_words

NEAR_DUPLICATE = 0.8


def _content(scenario: Any) -> frozenset[str]:
    return fact_words(" ".join(scenario.facts))


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
