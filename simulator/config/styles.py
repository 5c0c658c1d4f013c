"""Persona styles: named ways a real person differs from the plain scenario, read from a style catalogue.

A catalogue is a YAML file the suite names (`user.styles`, relative to the suite), e.g.
examples/triage_styles.yaml for the triage demo. Each style says what an LLM user is told (`persona`), how many
facts the person may volunteer, the tags it adds (which switch on criteria), an override of the expected
outcome, and how the offline user plays it (`offline`: the generic behaviours of simulator/text/styles.py,
parametrised by the catalogue's own text). The engine knows no domain's words: without `user.styles` a suite
gets DEFAULT_STYLES, a few domain-free styles. Factor levels name styles (`register: [plain, minimiser]`).
"""

from __future__ import annotations

__all__ = ["DEFAULT_STYLES", "OfflinePlay", "StyleCatalogue", "load_styles", "suite_styles"]

from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from simulator.config.patterns import UserPattern, compile_pattern
from simulator.config.yamlfile import load_model_file
from simulator.models import StrictModel, empty_dict, empty_list


class OfflinePlay(StrictModel):
    """How the offline user plays a style: rewrites of every message and one-off lines at fixed points."""

    third_person: bool = False  # facts said about someone else ("I am 52" -> "they are 52")
    hedges: list[str] = Field(default_factory=empty_list)  # one (seeded) put before each fact
    drop_articles: bool = False  # "a", "an", "the" left out
    typos: bool = False  # lowercase, no punctuation, one swapped pair of letters per message
    bursts: bool = False  # each fact told is its own message, several before the bot answers
    opening: str | None = None  # added to the first message
    midway: str | None = None  # added to the second answer
    instead_of_end: str | None = None  # said once instead of ending after the bot's outcome
    when: str | None = None  # ...only when the outcome matches this regular expression (case insensitive)

    @field_validator("when")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            compile_pattern(pattern, "when")
        return pattern

    @cached_property
    def when_pattern(self) -> UserPattern | None:
        return compile_pattern(self.when, "when") if self.when else None

    def lines(self) -> list[str]:
        """Every line this style may add to a conversation (fidelity checks treat them as the persona's)."""
        said = [self.opening, self.midway, self.instead_of_end]
        return [line for line in said if line] + self.hedges


class Style(StrictModel):
    """One named style: what the LLM user is told, how many facts it may volunteer, tags, expected override
    and the offline user's play."""

    name: str = ""  # the catalogue key (filled in when the catalogue is read)
    description: str
    persona: str
    # Facts this person brings up unasked (None: the scenario's own); the offline user then volunteers
    # exactly that many instead of sometimes none.
    volunteers: int | None = Field(default=None, ge=0)
    tags: list[str] = Field(default_factory=empty_list)
    expected: dict[str, Any] = Field(default_factory=empty_dict)  # overrides the scenario's expected keys
    offline: OfflinePlay = Field(default_factory=OfflinePlay)


class StyleCatalogue(StrictModel):
    """`styles`: style name -> Style, in the order the offline user applies their lines."""

    styles: dict[str, Style] = Field(default_factory=empty_dict)
    _source: str = PrivateAttr(default="the built-in styles")

    @property
    def source(self) -> str:
        """Where the catalogue came from (a file, or the built-in styles), for error messages."""
        return self._source

    @model_validator(mode="after")
    def _named(self) -> StyleCatalogue:
        for name, style in self.styles.items():
            style.name = name
        return self

    def get(self, name: str) -> Style | None:
        """The style called `name`, or None."""
        return self.styles.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.styles

    def names(self) -> str:
        """The style names, for error messages."""
        return ", ".join(sorted(self.styles)) or "none"


DEFAULT_STYLES = StyleCatalogue.model_validate(
    {
        "styles": {
            "minimiser": {
                "description": "plays everything down; volunteers nothing",
                "persona": 'Plays everything down ("it\'s probably nothing", "only a bit") and never brings '
                "anything up unless asked.",
                "volunteers": 0,
                "offline": {
                    "hedges": [
                        "prob nothing but",
                        "its probably nothing,",
                        "only a bit but",
                        "not a big deal but",
                    ]
                },
            },
            "relative-speaks": {
                "description": "someone else writes on the person's behalf",
                "persona": "A relative is typing on the person's behalf and answers for them in the third "
                'person ("my dad has ...").',
                "offline": {
                    "third_person": True,
                    "opening": "hi, i'm writing for my mum, she's not good with phones.",
                },
            },
            "second-language": {
                "description": "writes in simple second-language English",
                "persona": "English is a second language: short simple sentences, missing articles, "
                "sometimes the wrong word.",
                "offline": {"drop_articles": True, "opening": "sorry my english not so good."},
            },
            "terse-typos": {
                "description": "very short lowercase messages with typos",
                "persona": "Types very short lowercase messages on a phone, with typos and no punctuation.",
                "offline": {"typos": True},
            },
            "anxious": {
                "description": "anxious; volunteers two facts at once",
                "persona": "Anxious and over-shares: brings up two things at once in the first message and "
                "asks whether it is serious.",
                "volunteers": 2,
                "offline": {"opening": "i'm really worried, is it serious?"},
            },
        }
    }
)


def load_styles(path: Path) -> StyleCatalogue:
    """Read a style catalogue; mistakes name file, line and field."""
    catalogue = load_model_file(
        path,
        StyleCatalogue,
        title="invalid style catalogue",
        missing=f"{path}: no such style catalogue; check user.styles in the suite",
        shape="a style catalogue is a mapping: styles: {name: {description:, persona:}}",
    )
    catalogue._source = str(path)
    return catalogue


def suite_styles(suite: Any) -> StyleCatalogue:
    """The catalogue a suite names in `user.styles` (relative to the suite file), else DEFAULT_STYLES."""
    path = getattr(suite.user, "styles", None)
    return load_styles(suite.resolve(path)) if path else DEFAULT_STYLES
