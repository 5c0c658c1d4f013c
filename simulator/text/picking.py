"""How the offline user answers a message with options: it taps only what its facts support.

Deterministic, by meaning. A yes/no question is answered as a typed answer would be, from one decision
(text/meaning.py `knowledge`): "Yes" when a fact says it (the pick records that fact), "No" when a fact rules it
out, otherwise "Not sure", or typing what it knows when there is no such button. A fact on the subject that
does not say what was asked ("My period is two weeks late" for "have you ever had an ectopic pregnancy
before?") is no "Yes"; no fact on the subject is no "No". Any other set of options is a menu: the option its
facts (or goal) support best; when none is supported, the honest negative ("None of these", "Something else",
"No") only when a fact says none applies ("No other symptoms"); else "Not sure", or typing.
"""

from __future__ import annotations

__all__ = ["choose_option", "negative_option", "none_applies", "option_text", "plain", "yes_no"]

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from simulator.record.parts import Option
from simulator.text.meaning import Knowledge, Reader, Reading, knowledge, support

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


def _answer(known: Knowledge, yes: Option, no: Option | None, unsure: Option | None) -> Choice:
    """The Yes / No / Not sure tap that says what a typed answer would (text/meaning.py `knowledge`): "Yes"
    from a fact that says it, "No" from one that rules it out, else "Not sure", or typing when there is none
    (the typed answer then tells what the person knows, or that it does not know)."""
    if known.answer == "yes":
        if known.yes:
            return Choice(yes, known.yes, "fact", "a fact says yes")
        return Choice(yes, [], "goal", "the goal says yes")
    if known.answer == "no" and no is not None:
        return Choice(no, known.no, "fact", "a fact rules it out")
    if known.answer == "unsure" and unsure is not None:
        return Choice(unsure, known.unknown, "unsure", "no fact decides it")
    return Choice(None, [], None, f"the facts say {known.answer} and no option does: typed")


def none_applies(options: Sequence[Option], reader: Reader, facts: Sequence[Reading]) -> list[int]:
    """The facts (indices) that say none of a menu's rows applies: a blanket negative ("No other symptoms"),
    else facts ruling out every row; [] when no fact says so (the person does not know)."""
    blanket = [i for i, f in enumerate(facts) if f.blanket_no]
    _, no, unsure = yes_no(options)
    rows = [o for o in options if o not in (negative_option(options), no, unsure)]
    ruled_out = [support(reader.read(option_text(o)), facts).no for o in rows]
    return blanket or (sorted({i for r in ruled_out for i in r}) if ruled_out and all(ruled_out) else [])


def choose_option(
    options: list[Option], question: str, reader: Reader, facts: Sequence[Reading], goal: Reading
) -> Choice:
    """The option this person taps, given what each of its facts (and its goal) is about."""
    yes, no, unsure = yes_no(options)
    if yes is not None and (no is not None or unsure is not None):
        return _answer(knowledge(reader.read(question), facts, goal), yes, no, unsure)
    best: tuple[float, int, list[int], bool] = (0.0, -1, [], False)
    negative = negative_option(options)
    for position, option in enumerate(options):
        if option is negative:
            continue
        found = support(reader.read(option_text(option)), facts, goal)
        if found.supported and found.score > best[0]:
            best = (found.score, position, found.yes, found.goal)
    if best[1] >= 0:
        basis: Basis = "fact" if best[2] else "goal"
        return Choice(options[best[1]], best[2], basis, f"supported by the {basis}")
    # None of the rows is supported: "None of these" only when a fact says so ("No other symptoms", or a fact
    # ruling out every row); otherwise the person does not know, as a typed answer would say.
    denied = none_applies(options, reader, facts)
    closing = negative or no
    if closing is not None and denied:
        return Choice(closing, denied, "negative", "a fact says none of the rows applies")
    if unsure is not None:
        return Choice(unsure, [], "unsure", "no fact supports or rules out the rows")
    return Choice(None, [], None, "no fact supports any option or says none applies: typed")
