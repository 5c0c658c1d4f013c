"""The offline user's domain words: synonyms a person and a bot use for the same thing, and the phrases by
which a bot gives its outcome. The engine ships none of a domain's words; a suite names a vocabulary file
(`user.vocabulary`), e.g. examples/triage_vocabulary.yaml for the triage demo."""

from __future__ import annotations

__all__ = ["Phrases", "Vocabulary", "load_vocabulary"]

from functools import cached_property
from pathlib import Path

from pydantic import Field, ValidationInfo, field_validator, model_validator

from simulator.config.languages import language_code
from simulator.config.patterns import UserPattern, compile_pattern
from simulator.config.yamlfile import load_model_file
from simulator.errors import FieldProblem, field_path
from simulator.models import StrictModel, empty_dict, empty_list


class Phrases(StrictModel):
    """What the offline user says in one language besides the scenario's own words."""

    greetings: list[str] = Field(min_length=1)  # put before the goal in the first message ("" allowed)
    want_to: str = Field(min_length=1)  # put before a goal that does not start with the speaker
    dont_know: list[str] = Field(min_length=1)  # answers to what the facts do not cover
    nudges: list[str] = Field(min_length=1)  # when the bot stops asking without advising
    # A goal starting with one of these words already speaks for the person ("I", "my" in English).
    speaker_words: list[str] = Field(default_factory=empty_list)
    # Words too common to say which fact a question asks for ("el", "de" in Spanish), left out of the
    # words the offline user matches in this language (English has its own list: text/words.py).
    stop_words: list[str] = Field(default_factory=empty_list)


# The offline user's English: the built-in phrases, in the order the seeded choices draw from.
ENGLISH = Phrases(
    greetings=["hi, ", "hello. ", "", "hey "],
    want_to="I want to",
    dont_know=["not sure", "i don't know", "no idea tbh", "hmm not sure about that"],
    nudges=["so what should i do?", "ok... so what do you advise?", "what do you think i should do?"],
    speaker_words=["i", "my", "we", "our"],
)


class Vocabulary(StrictModel):
    """`topics`: what a fact or a question can be about -> the terms (words or phrases, matched exactly,
    longest first) that name it; `qualities`: the topics that say how rather than what (`pain`, `onset`), which
    alone never tie a question to a fact about something else; `synonyms`: the older form of `topics` (each
    canonical word a topic); `outcome_patterns`: regular expressions (case insensitive) that match a bot turn
    giving the person an outcome (advice on what to do). How the offline user reads them: docs/offline-user.md."""

    topics: dict[str, list[str]] = Field(default_factory=empty_dict)
    qualities: list[str] = Field(default_factory=empty_list)
    synonyms: dict[str, list[str]] = Field(default_factory=empty_dict)
    outcome_patterns: list[str] = Field(default_factory=empty_list)
    # Per outcome level, the phrases by which a bot advises it ("call 999", "book a GP appointment"): the
    # `messages` outcome source reads them when the suite gives none (docs/outcome-sources.md).
    outcome_levels: dict[str, list[str]] = Field(default_factory=empty_dict)
    # Sentences that advise nothing however they read ("If it gets worse, call 999"): safety-netting.
    outcome_ignore: list[str] = Field(default_factory=empty_list)
    # Per outcome level, the patient's words that call for at least that level ("chest pressure" ->
    # emergency): the floor a conversation without a scenario is held to (docs/outcome-sources.md).
    red_flags: dict[str, list[str]] = Field(default_factory=empty_dict)
    # Sentences of the patient's that flag nothing however they read ("no chest pain").
    red_flags_ignore: list[str] = Field(default_factory=empty_list)
    # The offline user's phrases in other languages, by code (`es`), for scenarios that write in one
    # (`writes_in`, `switches_to`); without them it cannot play such a scenario (config/languages.py).
    languages: dict[str, Phrases] = Field(default_factory=empty_dict)

    def phrases(self, language: str | None) -> Phrases | None:
        """The phrases for a language (`es`, `es-MX`): this file's, else built-in English, else None."""
        code = language_code(language)
        found = {language_code(key): value for key, value in self.languages.items()}.get(code)
        return ENGLISH if found is None and code == "en" else found

    @field_validator("outcome_patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            compile_pattern(pattern, "outcome_patterns")
        return patterns

    @field_validator("outcome_levels", "red_flags")
    @classmethod
    def _level_patterns_compile(
        cls, levels: dict[str, list[str]], info: ValidationInfo
    ) -> dict[str, list[str]]:
        for level, patterns in levels.items():
            for index, pattern in enumerate(patterns):
                compile_pattern(pattern, field_path((info.field_name or "", level, index)))
        return levels

    @field_validator("outcome_ignore", "red_flags_ignore")
    @classmethod
    def _ignore_compiles(cls, patterns: list[str], info: ValidationInfo) -> list[str]:
        for index, pattern in enumerate(patterns):
            compile_pattern(pattern, field_path((info.field_name or "", index)))
        return patterns

    @cached_property
    def word_map(self) -> dict[str, str]:
        """Every one-word term (and each topic name itself) -> its topic."""
        mapping: dict[str, str] = {}
        for canonical, words in {**self.synonyms, **self.topics}.items():
            for word in [canonical, *words]:
                if " " not in word.strip():
                    mapping.setdefault(word.lower(), canonical.lower())
        return mapping

    @model_validator(mode="after")
    def _qualities_are_topics(self) -> Vocabulary:
        unknown = [q for q in self.qualities if q not in self.topics and q not in self.synonyms]
        if unknown:
            raise FieldProblem(
                f"qualities {unknown} are not topics; list each under `topics:` first",
                "qualities",
                self.qualities.index(unknown[0]),
            )
        twice = sorted(set(self.topics) & set(self.synonyms))
        if twice:
            raise FieldProblem(
                f"{twice} are both topics and synonyms; keep each under `topics:` only", "synonyms", twice[0]
            )
        return self

    @cached_property
    def outcome(self) -> UserPattern | None:
        if not self.outcome_patterns:
            return None
        return compile_pattern("|".join(f"(?:{p})" for p in self.outcome_patterns), "outcome_patterns")


def load_vocabulary(path: Path) -> Vocabulary:
    """Read a vocabulary file; mistakes name file, line and field."""
    return load_model_file(
        path,
        Vocabulary,
        title="invalid vocabulary file",
        missing=f"{path}: no such vocabulary file; check user.vocabulary in the suite",
        shape="a vocabulary is a mapping: synonyms:, outcome_patterns:, outcome_levels:, outcome_ignore:, languages:",
    )
