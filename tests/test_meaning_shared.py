"""The offline user's and the fidelity audit's Reader is made once a vocabulary (by its content), and a text is
read once a Reader: both are pure, and every conversation of a scenario read its facts and goal again."""

from __future__ import annotations

from simulator.config.vocabulary import Vocabulary
from simulator.text.meaning import Reader, shared_reader

TEXTS = [
    "I have had chest pain for two hours and it goes to my left arm.",
    "No, my breathing is fine, nothing else.",
    "Is it the headache or the neck that hurts more?",
    "I am 55 years old.",
]


def _vocabulary(extra: str = "") -> Vocabulary:
    return Vocabulary.model_validate(
        {
            "topics": {"chest pain": ["chest pain", "tight chest"], "breathing": ["breathing", "breath"], "pain": ["pain", "hurts"],
                       **({extra: [extra]} if extra else {})},
            "qualities": ["pain"],
            "synonyms": {"headache": ["head ache"]},
        }
    )  # fmt: skip


def test_one_reader_per_vocabulary_content_and_stop_list() -> None:
    first = shared_reader(_vocabulary(), {"the", "a"})
    assert shared_reader(_vocabulary(), ["a", "the"]) is first  # equal content, another object
    assert shared_reader(_vocabulary("neck"), {"the", "a"}) is not first
    assert shared_reader(_vocabulary(), {"the"}) is not first


def test_a_shared_reader_reads_as_a_new_one_and_twice_the_same() -> None:
    shared = shared_reader(_vocabulary(), {"the", "a"})
    for text in TEXTS:
        fresh = Reader(_vocabulary(), {"the", "a"}).read(text)
        assert shared.read(text) == fresh
        assert shared.read(text) is shared.read(text)
        declared = shared.read(text, ["breathing"])
        assert declared == Reader(_vocabulary(), {"the", "a"}).read(text, ["breathing"]) != fresh
