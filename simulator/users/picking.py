"""How the offline user answers a message with options: it taps only what its facts support.

Deterministic, by meaning (users/meaning.py). A yes/no question: "Yes" when a fact says it (the pick records
that fact), "No" when a fact rules it out or no fact is on the subject at all (the scenario's facts are all the
person has), "Not sure" (or typing what it knows) when facts touch the subject without deciding it. Any other
set of options is a menu: the option its facts (or goal) support best; when none is supported, the honest
negative ("None of these", "Something else", "No"); with no such option, nothing is tapped and the person
types what it knows instead of guessing.
"""

from __future__ import annotations

__all__ = ["choose_option", "negative_option", "option_text", "plain", "yes_no"]

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from simulator.record.parts import Option
from simulator.users.meaning import Reader, Reading, support

_YES = {"yes", "y", "yeah", "yep", "si", "sí", "oui", "ja"}
_NO = {"no", "n", "nope", "non", "nein"}
_UNSURE = {"not sure", "unsure", "don't know", "i don't know", "no sé", "maybe", "no lo sé"}
# A row that says none of the others applies.
_NEGATIVE = re.compile(
    r"^(none( of (these|them|the above|those))?|nothing( else| like that)?|neither|no(ne)? other( \w+)?|"
    r"something else|other|others|anything else|not (these|any of these)|no,? none( of (these|them|the above))?|"
    r"none apply|i (don't|do not) have any( of (these|them))?|no symptoms|ninguno|ninguna|nada|ninguna de estas)$"
)

Basis = Literal["fact", "goal", "negative", "unsure"]


@dataclass
class Choice:
    """The option to tap (None: type instead), the facts (indices) it tells the bot, and why."""

    option: Option | None
    facts: list[int] = field(default_factory=list)
    basis: Basis | None = None
    why: str = ""


def plain(title: str) -> str:
    """An option's title as compared: lower case, no end punctuation, single spaces."""
    return " ".join(title.casefold().strip(" .!?").split())


def yes_no(options: Sequence[Option]) -> tuple[Option | None, Option | None, Option | None]:
    """The Yes, No and Not sure options among `options` (None where absent)."""
    yes = next((o for o in options if plain(o.title) in _YES), None)
    no = next((o for o in options if plain(o.title) in _NO), None)
    unsure = next((o for o in options if plain(o.title) in _UNSURE), None)
    return yes, no, unsure


def negative_option(options: Sequence[Option]) -> Option | None:
    """The option saying none of the others applies ("None of these", "Something else"), if any."""
    return next((o for o in options if _NEGATIVE.match(plain(o.title))), None)


def option_text(option: Option) -> str:
    """What an option says: its title and description (a section heading says nothing about one row)."""
    return " ".join(x for x in (option.title, option.description or "") if x)


def choose_option(
    options: list[Option], question: str, reader: Reader, facts: Sequence[Reading], goal: Reading
) -> Choice:
    """The option this person taps, given what each of its facts (and its goal) is about."""
    yes, no, unsure = yes_no(options)
    if yes is not None and (no is not None or unsure is not None):
        found = support(reader.read(question), facts, goal)
        if found.yes:
            return Choice(yes, found.yes, "fact", "a fact says yes")
        if found.no and no is not None:
            return Choice(no, found.no, "fact", "a fact rules it out")
        if found.goal:
            return Choice(yes, [], "goal", "the goal says yes")
        if found.partial:
            if unsure is not None:
                return Choice(unsure, [], "unsure", "facts touch the subject without deciding it")
            return Choice(None, found.partial, None, "facts touch the subject without deciding it: typed")
        if no is not None:
            return Choice(no, [], "negative", "no fact is on the subject")
        return Choice(unsure, [], "unsure", "no fact is on the subject and there is no No")
    best: tuple[float, int, list[int], bool] = (0.0, -1, [], False)
    negative = negative_option(options)
    for position, option in enumerate(options):
        if option is negative:
            continue
        found = support(reader.read(option_text(option)), facts, goal, menu=True)
        if found.supported and found.score > best[0]:
            best = (found.score, position, found.yes, found.goal)
    if best[1] >= 0:
        basis: Basis = "fact" if best[2] else "goal"
        return Choice(options[best[1]], best[2], basis, f"supported by the {basis}")
    if negative is not None:
        blanket = [i for i, f in enumerate(facts) if f.blanket_no]
        return Choice(negative, blanket, "negative", "no fact supports any other option")
    if no is not None:
        return Choice(no, [], "negative", "no fact supports any option")
    if unsure is not None:
        return Choice(unsure, [], "unsure", "no fact supports any option")
    return Choice(None, [], None, "no fact supports any option and none says none of these: typed")
