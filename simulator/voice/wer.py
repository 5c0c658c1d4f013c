"""Word error rate: how far what was heard is from what was said, in word edits per word said.

Both sides are compared as lower-case words without punctuation, fillers ("um", "uh", "er") left out (a
recogniser that drops them heard the caller right). WER = (substitutions + deletions + insertions) / words
said; it can exceed 1 when the hearer adds many words.
"""

from __future__ import annotations

__all__ = ["word_errors"]

import re
from dataclasses import dataclass

_WORD = re.compile(r"[a-z0-9']+")
_FILLERS = frozenset({"um", "uh", "er", "erm", "hmm"})


@dataclass(frozen=True)
class WordErrors:
    edits: int
    words: int

    @property
    def rate(self) -> float | None:
        return self.edits / self.words if self.words else None


def normal_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower().replace("you know", " ")) if w not in _FILLERS]


def word_errors(said: str, heard: str) -> WordErrors:
    """The word edits between `said` (the reference) and `heard`, with the number of words said."""
    ref, hyp = normal_words(said), normal_words(heard)
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        current = [i] + [0] * len(hyp)
        for j, other in enumerate(hyp, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
        previous = current
    return WordErrors(previous[-1], len(ref))
