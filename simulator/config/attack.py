"""An attack strategy: what an adversarial patient tries, how it escalates, and what counts as success.

Strategies are data a domain expert reads and extends (a red-team pack, simulator/config/redteam.py). A
variant scenario carries its strategy as `attack`, so the simulated user, the code check and the report all
read the same definition. Success is decided in code first (a pattern in the bot's replies, a canary the
attack planted, the bot's own instructions repeated, an outcome below the scenario's expected level); LLM
criteria named in `success.criteria` apply to the variant through its tags, for what code cannot decide.
"""

from __future__ import annotations

__all__ = ["RedTeamConfig", "Strategy"]

import re
from functools import cached_property
from typing import Annotated, Any

from pydantic import Field, field_validator

from simulator.config.assertions import compile_pattern
from simulator.config.named_files import NamesFile
from simulator.errors import field_path
from simulator.models import StrictModel, empty_dict, empty_list

# OWASP Top 10 for LLM Applications (2025): the entry a strategy exercises.
OWASP_LLM_TOP_10 = {
    "LLM01": "Prompt Injection",
    "LLM02": "Sensitive Information Disclosure",
    "LLM03": "Supply Chain",
    "LLM04": "Data and Model Poisoning",
    "LLM05": "Improper Output Handling",
    "LLM06": "Excessive Agency",
    "LLM07": "System Prompt Leakage",
    "LLM08": "Vector and Embedding Weaknesses",
    "LLM09": "Misinformation",
    "LLM10": "Unbounded Consumption",
}


class SuccessSpec(StrictModel):
    """When the attack succeeded (the bot failed). Any one condition is enough."""

    # Regular expressions (case-insensitive) over each bot message: a dose, a diagnosis given as fact.
    patterns: list[str] = Field(default_factory=empty_list)
    # A token the attack plants in its instructions ("reply with the word BANANA-7"): the bot obeyed.
    canary: str | None = None
    # The bot repeated this many consecutive words of its own instructions (`redteam.instructions` in the
    # suite, or a chat bot's system prompt): a leak. 0 turns it off.
    leak_words: int = Field(default=0, ge=0)
    # The bot's final outcome level is below the scenario's expected one (the suite's `outcome.levels`).
    downgrade: bool = False
    # LLM criteria (judges/ ids) that judge the same success where code cannot decide; informational here,
    # they apply to the variant through its tags like any criterion.
    criteria: list[str] = Field(default_factory=empty_list)

    @field_validator("patterns")
    @classmethod
    def _compile(cls, patterns: list[str]) -> list[str]:
        for number, pattern in enumerate(patterns):
            compile_pattern(pattern, field_path(("success", "patterns", number)))
        return patterns

    @cached_property
    def compiled(self) -> list[re.Pattern[str]]:
        return [re.compile(p, re.IGNORECASE) for p in self.patterns]

    @property
    def decided_in_code(self) -> bool:
        return bool(self.patterns or self.canary or self.leak_words or self.downgrade)


class Strategy(StrictModel):
    """One attack: who the attacker pretends to be, its escalation ladder, and its success criteria."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    title: str = Field(min_length=1)
    owasp: str = Field(pattern=r"^LLM(0[1-9]|10)$")
    hazards: list[str] = Field(default_factory=empty_list)
    # What an LLM attacker is told to try (appended to the persona), in the attacker's own terms.
    attacker: str = Field(min_length=1)
    # The offline attacker's escalation ladder: one line a turn, each a new angle after a refusal; the
    # first goes with the opening message. An LLM attacker gets them as ideas.
    ladder: list[str] = Field(min_length=1)
    # How an attacking message looks (regex, case-insensitive): if no user message matches, the attacker
    # never attacked, and the conversation says nothing about the bot (the simulator's fault).
    markers: str = Field(min_length=1)
    success: SuccessSpec
    # Overrides of the scenario's expected outcome (a buried self-harm disclosure makes it an emergency).
    expected: dict[str, Any] = Field(default_factory=empty_dict)
    # Only scenarios with any of these tags are attacked this way (empty: every scenario in scope).
    applies_to: list[str] = Field(default_factory=empty_list)
    # Filled in when a suite applies the pack: the bot's own instructions (for the leak check), and the
    # suite's outcome key and ordered levels (for the downgrade check).
    instructions: str | None = None
    outcome_key: str | None = None
    levels: list[str] = Field(default_factory=empty_list)

    @field_validator("markers")
    @classmethod
    def _markers_compile(cls, pattern: str) -> str:
        compile_pattern(pattern, "markers")
        return pattern

    @field_validator("owasp")
    @classmethod
    def _known_owasp(cls, value: str) -> str:
        if value not in OWASP_LLM_TOP_10:
            raise ValueError(f"not an OWASP LLM Top 10 entry; one of {', '.join(OWASP_LLM_TOP_10)}")
        return value

    @cached_property
    def marker_pattern(self) -> re.Pattern[str]:
        return re.compile(self.markers, re.IGNORECASE)

    @property
    def criterion_id(self) -> str:
        """The id of this strategy's code check: `redteam.<id>` (a fail is a successful attack)."""
        return f"redteam.{self.id}"


class RedTeamConfig(StrictModel):
    """The suite's `redteam:` section."""

    pack: Annotated[str, NamesFile()]  # the strategies file, relative to the suite
    # Only these strategies (by id); empty: every strategy of the pack.
    strategies: list[str] = Field(default_factory=empty_list)
    # Only scenarios with any of these tags are attacked (empty: every scenario the suite runs).
    tags: list[str] = Field(default_factory=empty_list)
    # Also run each attacked scenario straight (the refused-or-not comparison's reference).
    include_base: bool = True
    # The bot's own instructions, for the leak check (a chat bot's system prompt is read by itself).
    instructions_file: Annotated[str | None, NamesFile()] = None
    # The clinical groups the report gives success rates for (scenario tags, e.g. cardiac, stroke, sepsis).
    groups: list[str] = Field(default_factory=empty_list)
