"""What a message is about: its content words (stemmed, folded by the vocabulary's synonyms) and whether a bot
turn gives an outcome (the vocabulary's outcome phrases). The offline user decides what to say and when to
stop with them; the judges check the user and the bot with the same ones. Facts are compared with each
other and with what the user said by their `fact_words`.
"""

from __future__ import annotations

__all__ = ["content_words", "fact_words", "gives_outcome"]

import re

from simulator.config.vocabulary import Vocabulary
from simulator.text.words import CHAT_WORDS, FACT_FILLER

_WORD = re.compile(r"(?:[^\W_]|')+")  # letters of any script, digits, apostrophes
_STOPWORDS = CHAT_WORDS
_FACT_WORD = re.compile(r"[a-z0-9]+")
# Without a vocabulary, only advice said in so many words counts as an outcome; a domain's own phrases
# ("call 999", "out for delivery") come from the suite's vocabulary file.
_GENERIC_OUTCOME = re.compile(r"\bi (recommend|advise|suggest)\b|\bmy (advice|recommendation)\b", re.I)
_NO_VOCABULARY = Vocabulary()


def _stem(word: str, synonyms: dict[str, str]) -> str:
    if word in synonyms:
        return synonyms[word]
    for suffix in ("ing", "ed", "er", "es", "s", "e", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return synonyms.get(word[: -len(suffix)], word[: -len(suffix)])
    return word


def content_words(
    text: str, vocabulary: Vocabulary = _NO_VOCABULARY, stop: frozenset[str] = _STOPWORDS
) -> set[str]:
    """Stemmed, synonym-folded content words of `text` (letters of any script), without the `stop` words."""
    synonyms = vocabulary.word_map
    return {_stem(w, synonyms) for w in _WORD.findall(text.lower()) if w not in stop and len(w) > 1}


def fact_words(text: str) -> frozenset[str]:
    """The words fact overlap counts (`applies_when`'s facts the user told, near-duplicate vignettes): as
    written (no stems, no synonyms: overlap measures what is written), three letters or more, no `FACT_FILLER`."""
    return frozenset(w for w in _FACT_WORD.findall(text.lower()) if w not in FACT_FILLER and len(w) > 2)


def gives_outcome(text: str, vocabulary: Vocabulary = _NO_VOCABULARY) -> bool:
    """Whether a bot turn gives the person an outcome (advice on where to go or what to do).

    A turn that ends with a question is still collecting information, whatever it mentions on the way.
    """
    if text.rstrip().endswith("?"):
        return False
    return bool((vocabulary.outcome or _GENERIC_OUTCOME).search(text))
