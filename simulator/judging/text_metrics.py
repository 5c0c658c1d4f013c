"""Reference-based text metrics (exact match, token F1, ROUGE-L, difflib ratio): cheap, gate nothing.

Exact match and token F1 follow the SQuAD definitions (Rajpurkar et al. 2016, section 6.1): lowercase,
strip punctuation, drop the articles a/an/the, collapse whitespace. ROUGE-L is the LCS-based F-measure of
Lin (2004, section 3.1) over the same normalised tokens. The difflib ratio is
`SequenceMatcher(None, a, b, autojunk=False).ratio()` on the raw strings: autojunk would silently treat
spaces and common letters as junk once a string reaches 200 characters.
"""

from __future__ import annotations

__all__ = ["difflib_ratio", "exact_match", "normalize", "rouge_l", "token_f1", "tokens"]

import string
from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher

_PUNCT = frozenset(string.punctuation)
_ARTICLES = frozenset({"a", "an", "the"})


def normalize(text: str) -> str:
    """SQuAD normalisation: lowercase, remove punctuation, drop articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(word for word in text.split() if word not in _ARTICLES)


def tokens(text: str) -> list[str]:
    """The normalised tokens of a text (what F1 and ROUGE-L count)."""
    return normalize(text).split()


def exact_match(prediction: str, references: str | Sequence[str]) -> bool:
    """True when the normalised prediction equals the normalised form of any one reference."""
    refs = [references] if isinstance(references, str) else list(references)
    pred = normalize(prediction)
    return any(pred == normalize(ref) for ref in refs)


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1: prediction and reference as bags of normalised tokens.

    When either side has no tokens, the score is 1.0 if both are empty and 0.0 otherwise (the official
    SQuAD 2.0 script's convention).
    """
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Longest common subsequence length by the standard DP table, keeping one row of min(m, n) + 1 cells."""
    if len(a) < len(b):
        a, b = b, a  # b is the shorter sequence: the row has len(b) + 1 cells
    row = [0] * (len(b) + 1)
    for x in a:
        diagonal = 0  # table[i-1][j-1]
        for j, y in enumerate(b, start=1):
            above = row[j]  # table[i-1][j]
            row[j] = diagonal + 1 if x == y else max(above, row[j - 1])
            diagonal = above
    return row[-1]


def rouge_l(prediction: str, reference: str, beta: float = 1.0) -> float:
    """ROUGE-L F-measure: LCS recall (over the reference) and precision (over the prediction), token level."""
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    lcs = _lcs_length(pred, ref)
    if lcs == 0:
        return 0.0
    recall, precision = lcs / len(ref), lcs / len(pred)
    return (1 + beta**2) * recall * precision / (recall + beta**2 * precision)


def difflib_ratio(prediction: str, reference: str) -> float:
    """`SequenceMatcher.ratio()` (2·M/T) on the raw strings, with autojunk off."""
    return SequenceMatcher(None, prediction, reference, autojunk=False).ratio()
