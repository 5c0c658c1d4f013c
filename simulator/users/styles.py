"""How the offline user plays persona styles: generic behaviours parametrised by the suite's style catalogue
(simulator/config/styles.py), which holds every line the person says.

Rewrites change every message (hedges before facts, articles left out, terse with
typos); lines are added once at a fixed point (the opening, the second answer, instead of ending after the
bot's outcome, optionally only when that outcome matches a pattern). Lines follow the catalogue's order and
are deterministic for (seed, scenario, repeat).
"""

from __future__ import annotations

__all__ = ["StylePlayer"]

import random
import re

from simulator.config.styles import DEFAULT_STYLES, OfflinePlay, StyleCatalogue

_ARTICLES = re.compile(r"\b(a|an|the)\s+", re.I)
_PUNCT = re.compile(r"[.,;:!]")


def _typos(text: str, rng: random.Random) -> str:
    """Lowercase, no punctuation, one swapped pair of letters in one long word."""
    words = _PUNCT.sub("", text.lower()).split()
    long = [i for i, w in enumerate(words) if len(w) > 4 and w.isalpha()]
    if long:
        i = rng.choice(long)
        w = words[i]
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


class StylePlayer:
    """The styles one offline conversation plays: message rewrites and one-off extra lines."""

    def __init__(
        self, styles: list[str], rng: random.Random, catalogue: StyleCatalogue = DEFAULT_STYLES
    ) -> None:
        unknown = [name for name in styles if name not in catalogue]
        if unknown:
            raise ValueError(f"styles {unknown} are not in {catalogue.source} ({catalogue.names()})")
        self.styles = set(styles)
        # Active styles' plays, in catalogue order (the order their lines are said in).
        self._plays = [(n, s.offline) for n, s in catalogue.styles.items() if n in self.styles]
        self._rng = rng
        self._said: set[tuple[str, str]] = set()

    def _any(self, flag: str) -> bool:
        return any(getattr(play, flag) for _, play in self._plays)

    @property
    def bursts(self) -> bool:
        """Whether the person sends each thing they say as its own message before the bot answers."""
        return self._any("bursts")

    @property
    def third_person(self) -> bool:
        """Whether a relative answers for the person (users/voice.py says the facts in the third person)."""
        return self._any("third_person")

    def fact(self, text: str) -> str:
        """A fact as this person says it (already in the speaker's voice: users/voice.py)."""
        hedges = [h for _, play in self._plays for h in play.hedges]
        if hedges:
            text = f"{self._rng.choice(hedges)} {text[0].lower()}{text[1:]}"
        return text

    def message(self, text: str) -> str:
        """Any message as this person types it."""
        if self._any("drop_articles"):
            text = _ARTICLES.sub("", text)
        if self._any("typos"):
            text = _typos(text, self._rng)
        return text

    def _once(self, name: str, point: str, play: OfflinePlay) -> str | None:
        line = getattr(play, point)
        if not line or (name, point) in self._said:
            return None
        self._said.add((name, point))
        return str(line)

    def opening_lines(self) -> list[str]:
        """Lines added to the first message (after the goal)."""
        return [line for name, play in self._plays if (line := self._once(name, "opening", play))]

    def mid_line(self, user_turns: int) -> str | None:
        """A line added to the second answer (one per answer, in catalogue order)."""
        if user_turns < 2:
            return None
        return next((line for n, p in self._plays if (line := self._once(n, "midway", p))), None)

    def instead_of_end(self, outcome_text: str) -> str | None:
        """What this person says instead of ending after the bot's outcome, once per style (None: end)."""
        for name, play in self._plays:
            if play.when_pattern is not None and not play.when_pattern.search(outcome_text):
                continue
            line = self._once(name, "instead_of_end", play)
            if line:
                return line
        return None

    @staticmethod
    def lines(catalogue: StyleCatalogue) -> list[str]:
        """Every line any style of the catalogue may add."""
        return [line for style in catalogue.styles.values() for line in style.offline.lines()]
