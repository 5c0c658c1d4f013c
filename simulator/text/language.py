"""Which language a short message is in, told by its function words: enough for the fidelity drift check.

Chat messages are too short for a statistical language model to be reliable, and the check needs only to
tell whether a message left the languages the persona writes (config/languages.py). Each language has a
list of frequent function words (a few are shared, such as "que" in Spanish, French and Portuguese); a
message is in a language when at least two of its words are that language's and the runner-up has at
least two fewer. Otherwise it is undecided, and an undecided message is never drift.
"""

from __future__ import annotations

__all__ = ["FUNCTION_WORDS", "language_of", "spoken_languages"]

import re
import unicodedata
from typing import Any

from simulator.config.languages import persona_languages

FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "the",
            "and",
            "is",
            "my",
            "it",
            "to",
            "of",
            "in",
            "that",
            "have",
            "for",
            "not",
            "with",
            "you",
            "this",
            "but",
            "was",
            "what",
            "i'm",
            "i've",
            "don't",
            "do",
            "so",
            "am",
            "are",
            "been",
            "has",
            "had",
            "just",
            "can",
            "will",
            "would",
            "should",
            "about",
            "there",
            "when",
            "how",
            "they",
            "them",
            "their",
            "he",
            "she",
            "his",
            "her",
        ]
    ),
    "es": frozenset(
        [
            "el",
            "la",
            "los",
            "las",
            "que",
            "y",
            "en",
            "se",
            "mi",
            "es",
            "por",
            "una",
            "con",
            "para",
            "lo",
            "tengo",
            "pero",
            "muy",
            "como",
            "estoy",
            "esta",
            "está",
            "hace",
            "desde",
            "también",
            "porque",
            "cuando",
            "qué",
            "cómo",
            "dónde",
            "ya",
            "eso",
            "yo",
            "sí",
            "del",
            "al",
            "sé",
            "duele",
        ]
    ),
    "fr": frozenset(
        [
            "le",
            "les",
            "des",
            "et",
            "est",
            "je",
            "mon",
            "ma",
            "mes",
            "une",
            "avec",
            "pour",
            "pas",
            "qui",
            "que",
            "dans",
            "sur",
            "mais",
            "très",
            "c'est",
            "j'ai",
            "depuis",
            "aussi",
            "quand",
            "comment",
            "où",
            "du",
            "au",
            "oui",
        ]
    ),
    "de": frozenset(
        [
            "der",
            "die",
            "das",
            "und",
            "ist",
            "ich",
            "mein",
            "meine",
            "nicht",
            "mit",
            "für",
            "ein",
            "eine",
            "auf",
            "aber",
            "sehr",
            "seit",
            "auch",
            "wenn",
            "wie",
            "wo",
            "habe",
            "bin",
            "dem",
            "den",
            "des",
            "zu",
            "ja",
        ]
    ),
    "pt": frozenset(
        [
            "o",
            "os",
            "as",
            "que",
            "e",
            "em",
            "um",
            "uma",
            "com",
            "para",
            "não",
            "mas",
            "muito",
            "como",
            "estou",
            "está",
            "desde",
            "também",
            "quando",
            "onde",
            "eu",
            "sim",
            "do",
            "da",
            "dos",
            "das",
            "ao",
            "tenho",
            "dói",
        ]
    ),
}
_WORD = re.compile(r"(?:[^\W_]|')+")


def _words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFC", text).casefold().replace("\u2019", "'")
    return _WORD.findall(folded)


def language_of(text: str, languages: dict[str, frozenset[str]] = FUNCTION_WORDS) -> str | None:
    """The message's language code, or None when its words do not clearly say."""
    words = _words(text)
    scores = sorted(
        ((sum(w in vocab for w in words), code) for code, vocab in languages.items()), reverse=True
    )
    (best, code), (runner_up, _) = scores[0], scores[1]
    return code if best >= 2 and best - runner_up >= 2 else None


def spoken_languages(scenario: Any) -> set[str]:
    """The languages the persona may write in: `writes_in` (English when unset), those it `switches_to`,
    and the language of any attack line it was given to say (a pasted note in another language). Its first
    `language` is not among them: a second-language persona writing English drifts if it leaves English."""
    allowed = set(persona_languages(scenario))
    attack = getattr(scenario, "attack", None)
    if attack is not None:
        allowed |= {code for line in attack.ladder if (code := language_of(line)) is not None}
    return allowed
