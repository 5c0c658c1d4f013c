"""How the offline user answers a message with options: the one a person with its facts and goal would tap.

Deterministic: a yes/no question is answered from the facts (yes when a fact the person has not told yet
matches what is asked, no otherwise); any other set of options is read as a menu, and the option whose
title and description share the most content words with the facts and goal is tapped. When nothing
matches, a seeded choice (the same for the same seed, scenario and repeat).
"""

from __future__ import annotations

__all__ = ["choose_option"]

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from simulator.record.parts import Option

_YES = {"yes", "y", "yeah", "yep", "si", "sí", "oui", "ja"}
_NO = {"no", "n", "nope", "non", "nein"}
_UNSURE = {"not sure", "unsure", "don't know", "i don't know", "no sé", "maybe"}


@dataclass
class Choice:
    """The option to tap, and the facts (indices) it tells the bot."""

    option: Option
    facts: list[int] = field(default_factory=list)
    why: str = ""


def _plain(title: str) -> str:
    return " ".join(title.casefold().strip(" .!?").split())


def _yes_no(options: list[Option]) -> tuple[Option | None, Option | None, Option | None]:
    yes = next((o for o in options if _plain(o.title) in _YES), None)
    no = next((o for o in options if _plain(o.title) in _NO), None)
    unsure = next((o for o in options if _plain(o.title) in _UNSURE), None)
    return yes, no, unsure


def choose_option(
    options: list[Option],
    question: str,
    matching_facts: Callable[[str], list[int]],
    fact_words: list[set[str]],
    goal_words: set[str],
    words: Callable[[str], set[str]],
    rng: random.Random,
) -> Choice:
    """The option this person taps. `matching_facts(text)` are the unrevealed facts `text` asks about;
    `fact_words` and `goal_words` the content words of each fact and of the goal."""
    yes, no, unsure = _yes_no(options)
    if yes is not None and (no is not None or unsure is not None):
        facts = matching_facts(question)
        if facts:
            return Choice(yes, facts, "a fact matches the question")
        fallback = no if no is not None else unsure
        return Choice(fallback if fallback is not None else yes, [], "no fact matches the question")
    best: tuple[float, int] = (0.0, -1)
    for position, option in enumerate(options):
        said = words(" ".join(x for x in (option.title, option.description or "", option.section or "") if x))
        score = sum(len(said & facts) for facts in fact_words) + 0.5 * len(said & goal_words)
        if score > best[0]:
            best = (score, position)
    if best[1] >= 0:
        option = options[best[1]]
        return Choice(option, matching_facts(f"{option.title} {option.description or ''}"), "best match")
    return Choice(rng.choice(options), [], "seeded choice: no option matches the facts or goal")
