"""The offline user's domain words: synonyms a person and a bot use for the same thing, and the phrases by
which a bot gives its outcome. The engine ships none of a domain's words; a suite names a vocabulary file
(`user.vocabulary`), e.g. examples/triage_vocabulary.yaml for the triage demo."""

from __future__ import annotations

__all__ = ["Vocabulary", "load_vocabulary"]

from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from simulator.spec.patterns import UserPattern, compile_pattern
from simulator.spec.yamlfile import load_model_file


class Vocabulary(BaseModel):
    """`synonyms`: canonical word -> the words that mean it; `outcome_patterns`: regular expressions (case
    insensitive) that match a bot turn giving the person an outcome (advice on what to do)."""

    model_config = ConfigDict(extra="forbid")

    synonyms: dict[str, list[str]] = Field(default_factory=dict)
    outcome_patterns: list[str] = Field(default_factory=list)

    @field_validator("outcome_patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            compile_pattern(pattern, "outcome_patterns")
        return patterns

    @cached_property
    def word_map(self) -> dict[str, str]:
        """Every listed word (and each canonical word itself) -> its canonical form."""
        mapping = {canonical.lower(): canonical.lower() for canonical in self.synonyms}
        for canonical, words in self.synonyms.items():
            mapping.update({word.lower(): canonical.lower() for word in words})
        return mapping

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
        shape="a vocabulary is a mapping: synonyms:, outcome_patterns:",
    )
