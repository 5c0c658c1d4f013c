"""The suite file: everything that makes a run reproducible from one YAML file (CLI flags override it)."""

from __future__ import annotations

__all__ = [
    "BotConfig",
    "CacheConfig",
    "ChatBotConfig",
    "DecisionTool",
    "FidelityConfig",
    "HttpBotConfig",
    "JudgesConfig",
    "OutcomeConfig",
    "ProviderSettings",
    "PythonBotConfig",
    "Suite",
    "UserConfig",
    "check_environment",
    "is_suite_data",
    "load_suite",
]

import difflib
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from simulator.errors import Problem, UserError
from simulator.providers import PROVIDERS
from simulator.providers.settings import CacheConfig, ProviderSettings
from simulator.spec.matrix import MatrixConfig, expand_matrix
from simulator.spec.yamlfile import LocatedYAML, YAMLProblem, load_yaml, validate_model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScenarioSelection(_Strict):
    paths: list[str] = Field(default_factory=lambda: ["."])
    tags: list[str] = Field(default_factory=list)
    # Run scenarios marked `draft: true` too (they are refused otherwise).
    include_drafts: bool = False


class PythonBotConfig(_Strict):
    """A bot in Python: `module:factory` returns a fresh object with `send(text)` per conversation."""

    type: Literal["python"] = "python"
    factory: str = Field(pattern=r"^[\w.]+:[\w.]+$")

    def describe(self) -> str:
        return f"python:{self.factory}"


class HttpBotConfig(_Strict):
    """A bot behind HTTP; header values may name environment variables as ${VAR}, expanded at run time."""

    type: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    # The whole turn's deadline (not per read) and the most a reply may hold, decompressed.
    timeout_s: float = Field(default=30.0, gt=0)
    max_reply_bytes: int = Field(default=8_000_000, ge=1024)

    def describe(self) -> str:
        return f"http:{self.url}"


class DecisionTool(_Strict):
    """A tool the chat bot calls to record its decision; the call's arguments become the final state."""

    name: str = "record_decision"
    description: str = "Record your final decision once you have enough information."
    field: str = "decision"
    values: list[str] = Field(default_factory=list)


class ChatBotConfig(_Strict):
    """A bot that needs no code: a model plus a system prompt, for model and prompt comparisons."""

    type: Literal["chat"] = "chat"
    model: str = Field(pattern=r"^[\w.-]+:.+$")
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    temperature: float | None = None
    max_tokens: int = 400
    decision_tool: DecisionTool | None = None
    # Stream replies, so reports show the bot's time to first token.
    stream: bool = False

    @model_validator(mode="after")
    def _one_prompt(self) -> ChatBotConfig:
        if not self.system_prompt and not self.system_prompt_file:
            raise ValueError("a chat bot needs system_prompt or system_prompt_file")
        return self

    def describe(self) -> str:
        return f"chat:{self.model}"


BotConfig = Annotated[PythonBotConfig | HttpBotConfig | ChatBotConfig, Field(discriminator="type")]


class FidelityConfig(_Strict):
    """What to do with a conversation whose simulated user fails a fidelity check (docs/fidelity.md)."""

    on_fail: Literal["keep_and_flag", "regenerate"] = "keep_and_flag"
    max_regenerations: int = Field(default=2, ge=0)
    # The model for the checks that need reading (provenance of an LLM user, invented facts, drift,
    # role confusion); default: the judge model. Without one those checks are recorded as not judged.
    model: str | None = None
    max_tokens: int = Field(default=1500, ge=100)  # the audit answer: one entry per fact plus three checks
    enabled: bool = True


class UserConfig(_Strict):
    """The simulated user: `offline` (rule-based, no LLM), `auto`, or a model such as `anthropic:...`."""

    model: str = "auto"
    temperature: float | None = 1.0
    max_tokens: int = 300
    max_character_breaks: int = Field(default=3, ge=0)
    # The offline user's domain words (synonyms, outcome phrases): a YAML file relative to the suite.
    vocabulary: str | None = None
    # The persona styles factor levels name (persona text, tags, the offline user's lines): a YAML style
    # catalogue relative to the suite (simulator/spec/styles.py); default: a few domain-free styles.
    styles: str | None = None
    fidelity: FidelityConfig = Field(default_factory=FidelityConfig)


JuryRule = Literal["majority", "any_fail", "unanimous_pass"]


class JudgesConfig(_Strict):
    paths: list[str] = Field(default_factory=list)
    model: str | None = None
    # A jury: several judge models judge every item; `aggregate` combines them (`model` is then unused).
    models: list[str] = Field(default_factory=list)
    temperature: float | None = 0.0
    max_tokens: int = 1024
    # Judge every (conversation, criterion) this many times per judge model (A/A stability); the majority
    # counts, a tie is an error.
    samples: int = Field(default=1, ge=1, le=25)
    # The jury's rule by severity (`critical: any_fail`) or `default`; a criterion's own `aggregate` wins.
    aggregate: dict[Literal["default", "critical", "major", "minor"], JuryRule] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _distinct_models(self) -> JudgesConfig:
        if len(set(self.models)) != len(self.models):
            raise ValueError("judges.models lists a model twice; use samples to judge more than once")
        return self

    def judge_models(self) -> list[str]:
        """The judge models: the jury when one is given, else the single model, else none."""
        if self.models:
            return list(self.models)
        return [self.model] if self.model else []


class OutcomeConfig(_Strict):
    """Ordered outcome levels, lowest first; under- and over-triage come from this order."""

    key: str = Field(min_length=1)
    levels: list[str] = Field(min_length=2)
    critical: str | None = None

    @model_validator(mode="after")
    def _critical_is_a_level(self) -> OutcomeConfig:
        if self.critical is not None and self.critical not in self.levels:
            raise ValueError(f"critical level '{self.critical}' is not one of levels {self.levels}")
        return self


class Suite(_Strict):
    name: str = "suite"
    description: str | None = None
    scenarios: ScenarioSelection = Field(default_factory=ScenarioSelection)
    bot: BotConfig
    user: UserConfig = Field(default_factory=UserConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    runs: int = Field(default=1, ge=1)
    concurrency: int = Field(default=8, ge=1)
    seed: int = 0
    outcome: OutcomeConfig | None = None
    # Scenarios with this tag are listed as bugs in reports on any failure, never averaged away.
    high_stakes_tag: str | None = None
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    cache: CacheConfig | None = None
    # Keep each provider/bot raw request and response next to the turn, for debugging.
    record_raw: bool = True
    # Bot (and simulated-user) variants to compare on the same scenarios; see docs/matrix.md.
    matrix: MatrixConfig | None = None
    # Persona factors crossed with the scenarios (simulator/spec/factors.py); the first level is the reference.
    factors: dict[str, list[Any]] = Field(default_factory=dict)
    factor_design: Literal["full", "fractional"] = "full"

    @model_validator(mode="after")
    def _valid_factors(self) -> Suite:
        from simulator.spec.factors import levels_of

        for name, entries in self.factors.items():
            try:
                levels_of(entries)  # the shape; style names are checked against the catalogue by load_suite
            except ValueError as exc:
                raise ValueError(f"factor '{name}': {exc}") from exc
        return self

    _base_dir: Path = PrivateAttr(default=Path("."))
    _file: Path | None = PrivateAttr(default=None)
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    @property
    def file(self) -> Path | None:
        return self._file

    def resolve(self, relative: str) -> Path:
        """A path written in the suite, relative to the suite file's folder."""
        path = Path(relative)
        return path if path.is_absolute() else self._base_dir / path

    def provider_settings(self, provider: str) -> ProviderSettings:
        return self.providers.get(provider, ProviderSettings())

    def line_of(self, *loc: str | int) -> int | None:
        """The suite file's line of a field (or of its nearest ancestor), for errors found after loading."""
        return LocatedYAML(path=self._file or Path("suite"), data=None, lines=self._lines).line_of(loc)


def is_suite_data(data: Any) -> bool:
    """Whether parsed YAML is a suite file (it names a `bot`; a scenario has a `persona`), whatever the
    file's name: a `suite-http.yaml` next to the scenarios is a suite, not a broken scenario."""
    return isinstance(data, dict) and "bot" in data and "persona" not in data


def _provider_name_problems(source: LocatedYAML) -> list[Problem]:
    """`providers:` keys must be provider names: a misspelt one (`opnai`) would silently configure nothing."""
    providers = source.data.get("providers") if isinstance(source.data, dict) else None
    if not isinstance(providers, dict):
        return []
    problems = []
    for name in providers:
        if name in PROVIDERS:
            continue
        guess = difflib.get_close_matches(str(name), list(PROVIDERS), n=1)
        hint = f"did you mean '{guess[0]}'?" if guess else f"use one of: {', '.join(PROVIDERS)}"
        problems.append(
            Problem(
                str(source.path),
                f"unknown provider '{name}'; {hint}",
                line=source.line_of(("providers", name)),
                field=f"providers.{name}",
            )
        )
    return problems


def _judges_problems(source: LocatedYAML) -> list[Problem]:
    """`judges.models: []` (a jury of no one) and `model` with `models` (which one judges?) are mistakes."""
    judges = source.data.get("judges") if isinstance(source.data, dict) else None
    if not isinstance(judges, dict):
        return []
    file = str(source.path)
    if judges.get("models") == []:
        line = source.line_of(("judges", "models"))
        return [
            Problem(file, "judges.models is empty; list judge models, or remove it", line, "judges.models")
        ]
    if judges.get("model") and judges.get("models"):
        line = source.line_of(("judges", "model"))
        message = "set judges.model (one judge) or judges.models (a jury), not both"
        return [Problem(file, message, line, "judges.model")]
    return []


def check_environment(suite: Suite) -> None:
    """Before a run: every `api_key_env` the suite names must be set (validation does not need the keys)."""
    problems = []
    for name, settings in suite.providers.items():
        variable = settings.api_key_env
        if variable and not os.environ.get(variable):
            problems.append(
                Problem(
                    str(suite.file or "suite"),
                    f"api_key_env names {variable}, which is not set; set the {variable} environment "
                    f"variable, or remove api_key_env to use the provider's default",
                    line=suite.line_of("providers", name, "api_key_env"),
                    field=f"providers.{name}.api_key_env",
                )
            )
    if problems:
        raise UserError("the suite needs environment variables that are not set", problems)


def _check_factor_styles(suite: Suite, source: LocatedYAML) -> None:
    """Every style a factor level names must be in the suite's style catalogue (`user.styles`)."""
    from simulator.spec.factors import levels_of
    from simulator.spec.styles import suite_styles

    if not suite.factors:
        return
    styles = suite_styles(suite)
    problems = []
    for name, entries in suite.factors.items():
        try:
            levels_of(entries, styles)
        except ValueError as exc:
            line = source.line_of(("factors", name))
            problems.append(Problem(str(source.path), f"factor '{name}': {exc}", line, f"factors.{name}"))
    if problems:
        raise UserError("invalid suite file", problems)


def load_suite(path: Path, overrides: dict[str, Any] | None = None) -> Suite:
    """Load a suite file; `overrides` (from CLI flags) replace top-level keys before validation."""
    if not path.is_file():
        raise UserError(f"{path}: no such suite file; pass the path to a suite.yaml")
    try:
        source = load_yaml(path)
    except YAMLProblem as exc:
        raise UserError("invalid suite file", [exc.problem]) from exc
    if not isinstance(source.data, dict):
        raise UserError(
            "invalid suite file", [Problem(str(path), "a suite must be a mapping (bot:, user:, ...)")]
        )
    data = {**source.data, **(overrides or {})}
    suite, problems = validate_model(Suite, data, source)
    problems += _provider_name_problems(source) + _judges_problems(source)
    if suite is None or problems:
        raise UserError("invalid suite file", problems)
    suite._base_dir = path.parent.resolve()
    suite._file = path
    _check_factor_styles(suite, source)
    expand_matrix(suite, source)  # every cell must be a valid suite before anything runs
    suite._lines = source.lines
    return suite
