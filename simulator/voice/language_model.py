"""A small domain language model for the transcriber: a bigram ARPA file built from phrases.

pocketsphinx's general English model mishears synthetic telephone speech badly (docs/voice.md has the
figures); told the phrases a bot says (its prompts, its questions, its advice) it hears them far better,
as a deployed recogniser given a domain vocabulary does. Bigrams with absolute discounting (D = 0.5) and
add-one unigrams for the backoff: enough for a few hundred phrases, written in the ARPA text format
pocketsphinx reads, with a pronouncing dictionary cut down to the model's words (pocketsphinx takes about
ten seconds to start with a small model over its whole 130,000-word dictionary, a few milliseconds with
this one).
"""

from __future__ import annotations

__all__ = ["corpus_words", "write_model"]

import math
import re
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

_WORD = re.compile(r"[a-z']+")
_DISCOUNT = 0.5


def corpus_words(line: str) -> list[str]:
    """The words of a phrase as the recogniser spells them: lower case letters and apostrophes."""
    return _WORD.findall(line.lower())


def arpa_text(phrases: list[str]) -> str:
    """A bigram language model of `phrases` (one sentence each) in ARPA format."""
    unigrams: Counter[str] = Counter()
    bigrams: Counter[tuple[str, str]] = Counter()
    for phrase in phrases:
        words = ["<s>", *corpus_words(phrase), "</s>"]
        if len(words) == 2:
            continue
        unigrams.update(words)
        bigrams.update(pairwise(words))
    total, types = sum(unigrams.values()), len(unigrams)
    p_uni = {w: (c + 1) / (total + types) for w, c in unigrams.items()}
    following: dict[str, list[str]] = defaultdict(list)
    for first, second in bigrams:
        following[first].append(second)
    backoff = {}
    for first, seconds in following.items():
        left = _DISCOUNT * len(seconds) / unigrams[first]
        backoff[first] = left / max(1.0 - sum(p_uni[s] for s in seconds), 1e-9)
    lines = ["\\data\\", f"ngram 1={len(unigrams)}", f"ngram 2={len(bigrams)}", "", "\\1-grams:"]
    for word in sorted(unigrams):
        logp = -99.0 if word == "<s>" else math.log10(p_uni[word])
        tail = f"\t{math.log10(backoff[word]):.4f}" if word in backoff else ""
        lines.append(f"{logp:.4f}\t{word}{tail}")
    lines += ["", "\\2-grams:"]
    for (first, second), count in sorted(bigrams.items()):
        lines.append(f"{math.log10((count - _DISCOUNT) / unigrams[first]):.4f}\t{first} {second}")
    return "\n".join([*lines, "", "\\end\\", ""])


def _dictionary_lines(words: set[str]) -> list[str]:
    """The entries of pocketsphinx's shipped English dictionary for `words` (alternates `word(2)` too)."""
    import pocketsphinx

    path = Path(pocketsphinx.get_model_path()) / "en-us" / "cmudict-en-us.dict"
    keep = []
    # Not through simulator.readers: pocketsphinx's own shipped dictionary (35 MB, read a line at a time),
    # never a file a person or another program hands simulator.
    with path.open(encoding="utf-8") as entries:
        for line in entries:
            head = line.split(" ", 1)[0]
            if head.split("(", 1)[0] in words:
                keep.append(line if line.endswith("\n") else line + "\n")
    return keep


def write_model(phrases: list[str], folder: Path) -> dict[str, str]:
    """Write the domain model of `phrases` into `folder`; return the decoder options that load it (`lm`,
    `dict`). Words the dictionary lacks are never recognised: write numbers and letters as spoken."""
    text = arpa_text(phrases)
    words = {w for phrase in phrases for w in corpus_words(phrase)}
    lm, dictionary = folder / "domain.arpa", folder / "domain.dict"
    lm.write_text(text, encoding="utf-8")
    dictionary.write_text("".join(_dictionary_lines(words)), encoding="utf-8")
    return {"lm": str(lm), "dict": str(dictionary)}
