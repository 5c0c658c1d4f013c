"""How much a user tells before being asked: a heuristic that works on any transcript (docs/traces.md).

A user message is split into information units: clauses separated by `.`, `,`, `;`, `!`, `?`, a new
line, or the words "and", "but", "also", "plus" (a clause needs a word, or a number, that is not a
greeting or a bare yes/no/ok). The message was asked for as many units as the bot's previous message asked questions (its `?`
count), and at least one (the opening message states the reason for contacting, and "ok" replies to a
statement). Units beyond that are volunteered. So "chest pain since lunch, spreading to my jaw, im 58" after
no question volunteers 2 units; "yes" after "Are you short of breath?" volunteers none.
"""

from __future__ import annotations

__all__ = ["information_units", "volunteered_units"]

import re

from simulator.record.transcript import Turn

_SPLIT = re.compile(r"[.,;!?\n]+|\b(?:and|but|also|plus)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{2,}|\d+")
# Greetings and bare acknowledgements carry no information about the user's situation.
_FILLER = {
    "hi",
    "hey",
    "hello",
    "thanks",
    "thank",
    "you",
    "ok",
    "okay",
    "yes",
    "no",
    "yeah",
    "sure",
    "please",
    "sorry",
    "well",
    "um",
}


def information_units(text: str) -> int:
    """How many clauses with content (a word that is not a greeting or a bare yes/no) the message holds."""
    return sum(
        1 for clause in _SPLIT.split(text) if any(w.lower() not in _FILLER for w in _WORD.findall(clause))
    )


def volunteered_units(turns: list[Turn]) -> int:
    """Units the user gave beyond what the bot's previous message asked for, over the conversation."""
    asked = 0
    total = 0
    for turn in turns:
        if turn.role == "bot":
            asked = sum(message.count("?") for message in turn.messages)
            continue
        units = sum(information_units(m) for m in turn.messages)
        total += max(0, units - max(1, asked))
        asked = 0
    return total
