"""Scenarios as data: a persona, a goal and hidden facts, loaded from YAML files written by domain experts."""

from __future__ import annotations

__all__ = [
    "ID_PATTERN",
    "MAX_ID_CHARS",
    "SCENARIO_DOCUMENTS",
    "Scenario",
    "ScenarioId",
    "as_scenario_id",
    "refuse_drafts",
    "scenario_files",
]

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, WithJsonSchema, field_validator, model_validator

from simulator.config.assertions import AssertionSpec
from simulator.config.attack import Strategy
from simulator.config.documents import FileDocument, FileDocumentKind, yaml_files
from simulator.config.expected import ENVIRONMENT_KEY, Expected
from simulator.config.kinds import is_not_scenario_data
from simulator.config.languages import LANGUAGE_TAG
from simulator.config.script import Script
from simulator.config.tool_checks import ToolCheck, parse_state_path
from simulator.config.yamlfile import read_as_mapping
from simulator.errors import FieldProblem, UserError
from simulator.models import BuiltModel, StrictModel, empty_dict, empty_list

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

# A scenario's id names its conversations (`id#repeat`), its file, and a part of the desk's addresses: one
# word, no '#' (the repeat's separator), no '/' or '\' (a path's), no control character (C0, DEL, C1), no
# invisible one (a zero-width space, joiner or mark, a soft hyphen, a bidi override or isolate, a BOM: two
# ids that look the same would differ), at most 200 characters. A golden item's id names its conversations
# the same way.
_NOT_IN_ID = r"\s#/\\\x00-\x1f\x7f-\x9f\xad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
ID_PATTERN = f"^[^{_NOT_IN_ID}]+$"
MAX_ID_CHARS = 200
ScenarioId = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN)
]
_REFUSED_IN_ID = re.compile(f"[{_NOT_IN_ID}]+")


def as_scenario_id(text: str, fill: str = "-") -> str:
    """`text` made a scenario id (an imported conversation's key, a tau2 task): each run of characters an id
    refuses becomes `fill`, cut to leave room for a `-N` that makes it unique; "conversation" if nothing
    is left."""
    return _REFUSED_IN_ID.sub(fill, text.strip()).strip(fill)[: MAX_ID_CHARS - 10] or "conversation"


# Facts are a list of strings or one paragraph (split into sentences): the editor schema allows both.
_FACTS_SCHEMA = {
    "anyOf": [
        {
            "type": "array",
            "items": {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "properties": {
                            "text": {"type": "string", "minLength": 1},
                            "topic": {
                                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
                            },
                        },
                        "required": ["text"],
                        "additionalProperties": False,
                    },
                ]
            },
        },
        {"type": "string", "minLength": 1, "description": "one paragraph, split into sentences"},
    ],
    "title": "Facts",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


class UserMedia(StrictModel):
    """A photo or voice note the person sends, with the answer to a question on its `topic` (the offline
    user; docs/offline-user.md): what a photo shows (`description`) or a voice note says (`transcript`) is
    what the judge reads, as nobody looks at the bytes."""

    kind: Literal["image", "audio"]
    description: str | None = None
    transcript: str | None = None
    caption: str | None = None
    topic: list[Text] = Field(default_factory=empty_list)

    @model_validator(mode="after")
    def _says_what_it_holds(self) -> UserMedia:
        if self.kind == "image" and not self.description:
            raise FieldProblem(
                "an image needs a `description`: what the photo shows, which the judge reads", "kind"
            )
        if self.kind == "audio" and not self.transcript:
            raise FieldProblem("an audio note needs a `transcript`: what the person says in it", "kind")
        if not self.topic:
            raise FieldProblem("give the media a `topic`: it is sent with the answer to a question about it")
        return self


# How a conversation may end, as `expected` names it (record/models.py StopReason; judging/code_checks.py
# STOP_KEYS compares the flags; tests/test_silent_acceptance.py keeps the three in step).
ENDING_FLAGS = ("handover", "closed")
STOP_REASONS = ("user_done", "handover", "bot_closed", "max_turns", "error")


class Scenario(BuiltModel, FileDocument):
    """One simulated conversation to run: who the user is, what they want, what they know."""

    id: ScenarioId
    persona: Text
    goal: Text
    facts: Annotated[list[Text], WithJsonSchema(_FACTS_SCHEMA)] = Field(default_factory=empty_list)
    expected: Expected = Field(default_factory=empty_dict)
    max_turns: int = Field(default=12, ge=1, le=200)
    tags: list[Text] = Field(default_factory=empty_list)
    language: str | None = None
    # The language the person writes in (`language` above is their first language, which a second-language
    # persona may not write in), as a code such as `es`. Unset: English. The offline user speaks it with
    # the vocabulary's phrases (config/languages.py); the fidelity drift check flags any other language.
    writes_in: str | None = None
    # Languages the person switches into and back (code-switching, as real people do, seed 002's example):
    # in character, so the LLM user is told to and the fidelity drift check allows them.
    switches_to: list[str] = Field(default_factory=empty_list)
    notes: str | None = None
    # A reference final reply, for text metrics (recorded, gating nothing).
    reference: str | None = None
    # Deterministic assertions on the bot's messages (checked in code, no LLM).
    assertions: AssertionSpec | None = None
    # A draft (from `simulator draft-scenario`) is not a test until someone reviews it and removes this;
    # `run` refuses drafts unless they are included on purpose (--include-drafts, scenarios.include_drafts).
    draft: bool = False
    # Set for a golden item: the scripted user sends these lines instead of a simulated user playing a
    # persona, and the item's verdict is exact match or its assertions on the last reply.
    script: Script | None = None
    # Facts (numbered from 1, in the order of `facts`) the expected outcome depends on: a simulated user
    # that never reveals one of them has missed a fact that mattered (docs/fidelity.md).
    key_facts: list[Annotated[int, Field(ge=1)]] = Field(default_factory=empty_list)
    # Who is writing: the patient (`self`) or someone on their behalf; unset, guessed from the persona
    # ("writing about her toddler": parent). Facts of an on-behalf scenario are in the writer's voice ("My
    # mother is 84") and the offline user says them as written (docs/offline-user.md).
    speaker: Literal["self", "parent", "relative", "carer"] | None = None
    # What facts are about, where the offline user's guess from the vocabulary is wrong: fact number (from 1)
    # -> topics ("no X": ruled out). Written inline as `- {text: ..., topic: [glucose]}` in `facts`.
    fact_topics: dict[Annotated[int, Field(ge=1)], list[Text]] = Field(default_factory=empty_dict)
    # Photos and voice notes the person sends when asked about their topic (channels that take parts deliver
    # them: WhatsApp as Cloud API media, python and http bots as parts).
    media: list[UserMedia] = Field(default_factory=empty_list)
    # How many facts this person may bring up before being asked; more is an early reveal.
    volunteers: int = Field(default=1, ge=0)
    # Persona styles of the suite's style catalogue (simulator/config/styles.py, `user.styles`).
    styles: list[str] = Field(default_factory=empty_list)
    # Set on factorial variants: the base scenario's id and the level of each factor.
    base: str | None = None
    factors: dict[str, str] = Field(default_factory=empty_dict)
    # What this person does with buttons and lists: taps one (`tap`), or ignores them and types (`type`).
    # The offline user follows it; for an LLM user, say it in the persona too.
    buttons: Literal["tap", "type"] = "tap"
    # `held_out`: a sealed held-out scenario (record/seal.py); unset, the suite's `held_out.fraction` may
    # choose it by a seeded hash of its id.
    split: Literal["tuned", "held_out"] | None = None
    # Set on red-team variants (simulator/config/redteam.py): the attack strategy this person plays.
    attack: Strategy | None = None
    # This conversation's initial environment state, merged over the suite's `environment.state`
    # (docs/environment.md); `expected.environment` holds dotted paths of the final state to compare.
    environment: dict[str, Any] = Field(default_factory=empty_dict)
    # Checks on the bot's tool calls in this scenario (docs/tool-checks.md), beside the suite's.
    tool_checks: list[ToolCheck] = Field(default_factory=empty_list)

    @field_validator("facts", mode="before")
    @classmethod
    def _facts_from_text(cls, value: Any) -> Any:
        """Facts may be one paragraph (as in the seed) or a list; a paragraph is split into sentences."""
        if isinstance(value, str):
            return [part.strip() for part in _SENTENCE_END.split(value.strip()) if part.strip()]
        return value

    @model_validator(mode="before")
    @classmethod
    def _facts_with_topics(cls, data: Any) -> Any:
        """A fact written `{text: ..., topic: [..]}` is its text, its topics going to `fact_topics`."""
        if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
            return data
        facts, topics = [], dict(data.get("fact_topics") or {})
        for number, fact in enumerate(data["facts"], start=1):
            if not isinstance(fact, dict):
                facts.append(fact)
                continue
            unknown = sorted(set(fact) - {"text", "topic"})
            colon = read_as_mapping(fact) if unknown else None
            if colon is not None:  # `- Pain: sharp` is read by YAML as {Pain: sharp}
                raise FieldProblem(
                    f"fact {number}: '{colon}' was read as a key and a value, not as text (YAML reads ': ' "
                    f'that way); put it in quotes: - "{colon}"',
                    "facts",
                    number - 1,
                )
            if unknown or "text" not in fact:
                raise FieldProblem(
                    f"fact {number} has {', '.join(unknown) or 'no text'}; write a fact as text, or as "
                    "{text: ..., topic: [a topic, ...]}",
                    "facts",
                    number - 1,
                )
            facts.append(fact["text"])
            if fact.get("topic") is not None:
                topic = fact["topic"]
                topics[number] = [topic] if isinstance(topic, str) else topic
        return {**data, "facts": facts, "fact_topics": topics} if topics or facts != data["facts"] else data

    @field_validator("switches_to", mode="before")
    @classmethod
    def _one_language(cls, value: Any) -> Any:
        """`switches_to: es` means `[es]`."""
        return [value] if isinstance(value, str) else value

    @field_validator("writes_in", "switches_to")
    @classmethod
    def _language_codes(cls, value: Any) -> Any:
        """Languages are codes (`es`, `pt-BR`), so the users and the audit can tell them apart."""
        for tag in value if isinstance(value, list) else [value] if value is not None else []:
            if not LANGUAGE_TAG.match(tag):
                raise ValueError(f"'{tag}' is not a language code; write a code such as es, pt or pt-BR")
        return value

    @model_validator(mode="after")
    def _known_facts_and_styles(self) -> Scenario:
        """`key_facts` must index `facts` (`styles` are checked against the suite's catalogue when the suite
        loads its scenarios: config/factors.py)."""
        wrong = [i for i in self.key_facts if i > len(self.facts)]
        if wrong:
            raise FieldProblem(
                f"key_facts {wrong} number past the {len(self.facts)} facts; number facts from 1 in their order",
                "key_facts",
                self.key_facts.index(wrong[0]),
            )
        past = sorted(n for n in self.fact_topics if n > len(self.facts))
        if past:
            raise FieldProblem(
                f"fact_topics {past} number past the {len(self.facts)} facts; number facts from 1",
                "fact_topics",
            )
        ids = [check.check_id for check in self.tool_checks]
        twice = next((n for n, i in enumerate(ids) if i in ids[:n]), None)
        if twice is not None:
            raise FieldProblem(
                f"two tool_checks have the id {ids[twice]}; give each its own `id`", "tool_checks", twice
            )
        paths = self.expected.get(ENVIRONMENT_KEY)
        if paths is not None:
            if not isinstance(paths, dict) or not paths:
                raise FieldProblem(
                    "expected.environment maps state paths to values, e.g. `bookings[0].status: confirmed`",
                    "expected",
                    ENVIRONMENT_KEY,
                )
            for path in paths:
                try:
                    parse_state_path(str(path))
                except ValueError as exc:
                    raise FieldProblem(
                        f"expected.environment: {exc}", "expected", ENVIRONMENT_KEY, str(path)
                    ) from None
        self._check_ending()
        return self

    def _check_ending(self) -> None:
        """`handover`/`closed` are compared with booleans and `stop_reason` with how a conversation ends:
        `closed: 'yes'` would fail every conversation silently, so it is refused here."""
        for key in ENDING_FLAGS:
            if key in self.expected and not isinstance(self.expected[key], bool):
                raise FieldProblem(
                    f"expected.{key} is true or false, not {self.expected[key]!r} (write `{key}: true`)",
                    "expected",
                    key,
                )
        reason = self.expected.get("stop_reason")
        if reason is not None and reason not in STOP_REASONS:
            raise FieldProblem(
                f"expected.stop_reason {reason!r}: one of {', '.join(STOP_REASONS)}",
                "expected",
                "stop_reason",
            )


def scenario_files(paths: list[Path]) -> list[Path]:
    """All scenario files under the given files and folders (recursively): YAML scenarios and golden items
    in YAML or CSV. Suites, strategy packs and vocabularies among them are told apart by their content when
    loaded (`is_not_scenario_data`), whatever their names."""
    return yaml_files(paths, what="scenarios", suffixes=(".yaml", ".yml", ".csv"))


SCENARIO_DOCUMENTS = FileDocumentKind(
    model=Scenario,
    noun="scenario",
    list_key="scenarios",
    marker_key="persona",
    shape="id, persona, goal, ...",
    error_title="invalid scenario files",
    is_other=is_not_scenario_data,
)


def refuse_drafts(scenarios: list[Scenario], allowed: bool) -> None:
    """Raise unless drafts are allowed: an unreviewed draft must never become a test by accident."""
    drafts = [s for s in scenarios if s.draft]
    if drafts and not allowed:
        named = ", ".join(f"{s.source} ({s.id})" for s in drafts[:5])
        more = f" and {len(drafts) - 5} more" if len(drafts) > 5 else ""
        raise UserError(
            f"{len(drafts)} draft scenarios are not reviewed: {named}{more}. Have a clinician review each, set "
            "its expected outcome and remove `draft: true`; or run them on purpose with --include-drafts "
            "(suite: scenarios.include_drafts: true)"
        )
