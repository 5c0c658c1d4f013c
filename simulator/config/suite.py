"""The suite file: everything that makes a run reproducible from one YAML file (CLI flags override it)."""

from __future__ import annotations

__all__ = [
    "MAX_RUNS",
    "CacheConfig",
    "FidelityConfig",
    "OutcomeConfig",
    "ProviderSettings",
    "Suite",
    "UserConfig",
    "blamed_on_option",
    "check_environment",
    "given_by_option",
    "load_suite",
]

import os
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, PrivateAttr, WithJsonSchema, field_validator, model_validator

from simulator.config.attack import RedTeamConfig
from simulator.config.bot_kinds import ENVIRONMENT, AnyBot, kinds_with
from simulator.config.claims import unknown_claim_tools
from simulator.config.environment import EnvironmentSpec, check_environment_functions
from simulator.config.matrix import MatrixConfig, expand_matrix
from simulator.config.named_files import NamesFile, NamesFolder
from simulator.config.outcome_source import (
    SOURCE_SCHEMA,
    SOURCES,
    JudgeSource,
    MessagesSource,
    SourceName,
    ToolSource,
    check_phrases,
)
from simulator.config.patterns import compile_pattern
from simulator.config.providers import PROVIDERS, CacheConfig, MaxTokens, ProviderSettings, Temperature
from simulator.config.relations import Relation
from simulator.config.tool_checks import ToolChecksConfig, unknown_tool
from simulator.config.yamlfile import LocatedYAML, YAMLProblem, load_yaml, parse_yaml, validate_model
from simulator.errors import FieldProblem, Problem, UserError, did_you_mean, field_path, option_forms
from simulator.models import BuiltModel, empty_dict, empty_list
from simulator.models import StrictModel as _Strict
from simulator.readers import missing

if TYPE_CHECKING:
    from simulator.config.scenario import Scenario


class ScenarioSelection(_Strict):
    paths: Annotated[list[str], NamesFolder()] = Field(default_factory=lambda: ["."])
    tags: list[str] = Field(default_factory=empty_list)
    # Run scenarios marked `draft: true` too (they are refused otherwise).
    include_drafts: bool = False

    @field_validator("paths")
    @classmethod
    def _some_paths(cls, paths: list[str]) -> list[str]:
        # An empty list passed `validate` yet left `run` nothing to read (and `accept-draft` no folder).
        if not paths:
            raise ValueError("name at least one scenario folder or file, e.g. paths: ['.'] (or leave it out)")
        return paths


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
    # Several simulated users, each playing every scenario x repeat (config/simulators.py): models, or
    # {short-name: model}; `model` is then not given.
    models: list[str | dict[str, str]] | None = None
    temperature: Temperature = 1.0
    max_tokens: MaxTokens = 300
    max_character_breaks: int = Field(default=3, ge=0)
    # The offline user's domain words (synonyms, outcome phrases): a YAML file relative to the suite.
    vocabulary: Annotated[str | None, NamesFile()] = None
    # The persona styles factor levels name (persona text, tags, the offline user's lines): a YAML style
    # catalogue relative to the suite (simulator/config/styles.py); default: a few domain-free styles.
    styles: Annotated[str | None, NamesFile()] = None
    fidelity: FidelityConfig = Field(default_factory=FidelityConfig)

    @field_validator("models")
    @classmethod
    def _valid_models(cls, models: list[str | dict[str, str]] | None) -> list[str | dict[str, str]] | None:
        from simulator.config.simulators import parse_user_models

        if models is not None:
            parse_user_models(models)
        return models

    @model_validator(mode="after")
    def _one_or_several(self) -> UserConfig:
        # A stored suite writes the default `auto` beside `models`: only a model the author chose conflicts.
        if self.models is not None and "model" in self.model_fields_set and self.model != "auto":
            raise FieldProblem(
                "give either user.model (one simulated user) or user.models (several), not both", "model"
            )
        return self

    def model_list(self) -> list[str]:
        """Every model that may play the user: the several of `models`, else the one `model`."""
        if self.models is None:
            return [self.model]
        from simulator.config.simulators import parse_user_models

        return list(parse_user_models(self.models).values())


JuryRule = Literal["majority", "any_fail", "unanimous_pass"]


class JudgesConfig(_Strict):
    paths: Annotated[list[str], NamesFolder()] = Field(default_factory=empty_list)
    model: str | None = None
    # A jury: several judge models judge every item; `aggregate` combines them (`model` is then unused).
    models: list[str] = Field(default_factory=empty_list)
    temperature: Temperature = 0.0
    max_tokens: MaxTokens = 1024
    # Judge every (conversation, criterion) this many times per judge model (A/A stability); the majority
    # counts, a tie is an error.
    samples: int = Field(default=1, ge=1, le=25)
    # The jury's rule by severity (`critical: any_fail`) or `default`; a criterion's own `aggregate` wins.
    aggregate: dict[Literal["default", "critical", "major", "minor"], JuryRule] = Field(
        default_factory=empty_dict
    )

    @model_validator(mode="after")
    def _distinct_models(self) -> JudgesConfig:
        again = next((n for n, model in enumerate(self.models) if model in self.models[:n]), None)
        if again is not None:
            raise FieldProblem(
                "judges.models lists a model twice; use samples to judge more than once", "models", again
            )
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
    # The harm of each wrong cell of the confusion matrix: expected level -> actual level (or `no decision`,
    # `other`) -> weight >= 0; cells not named weigh 0 (docs/safety-case.md, harm-weighted error).
    harm_weights: dict[str, dict[str, float]] = Field(default_factory=empty_dict)
    # Where the outcome is read from (config/outcome_source.py): one source, or several in order (the first
    # that decides wins; all are recorded, and two or more give an agreement figure).
    source: Annotated[list[SourceName], WithJsonSchema(SOURCE_SCHEMA)] = Field(
        default_factory=lambda: list[SourceName](["state"])
    )
    messages: MessagesSource | None = None
    tool: ToolSource | None = None
    judge: JudgeSource | None = None
    # The patient's own words that set a minimum safe level (a floor) for a conversation without a scenario
    # (imported, live): level -> regular expressions read over the user's messages; the most urgent level
    # matched is the floor, and a bot below it under-triaged (docs/outcome-sources.md, "Live conversations").
    # Default: the vocabulary's `red_flags`. `red_flags_ignore`: sentences that flag nothing ("no chest pain").
    red_flags: dict[str, list[str]] = Field(default_factory=empty_dict)
    red_flags_ignore: list[str] = Field(default_factory=empty_list)

    @field_validator("source", mode="before")
    @classmethod
    def _one_source_or_several(cls, value: Any) -> Any:
        """`source: messages` or `source: [messages, state]`; an unknown name says which ones exist."""
        names = [value] if isinstance(value, str) else value
        if isinstance(names, list):
            for name in names:
                if name not in SOURCES:
                    raise ValueError(f"unknown outcome source {name!r}: use {', '.join(SOURCES)}")
        return names

    def not_a_level(self, value: Any) -> str | None:
        """Why `value` cannot be a scenario's expected `key`: not one of the levels, with the declared spelling
        (`Emergency` -> `emergency`) or the closest level (`emergncy`) to write; None when it is one. The one
        check of the scenario files (engine/preflight.py) and of a run's manifest (record/manifest.py)."""
        if isinstance(value, str) and value in self.levels:
            return None
        text = str(value).lower() if isinstance(value, bool) else str(value)  # as YAML and JSON write it
        guess = did_you_mean(text.strip(), self.levels)
        hint = (
            f"{guess} (levels are written as outcome.levels declares them)"
            if guess
            else f"write one of {', '.join(self.levels)}"
        )
        return f"expected {self.key} '{text}' is not one of outcome.levels {self.levels}; {hint}"

    @property
    def sources(self) -> list[str]:
        """The sources in the order they decide."""
        return list(self.source)

    @property
    def default_source(self) -> bool:
        """True for the bot's state alone, configured no further: the judge set keeps the hash it had."""
        return (
            self.sources == ["state"]
            and self.messages is None
            and self.tool is None
            and self.judge is None
            and not self.red_flags
        )

    @field_validator("levels")
    @classmethod
    def _levels_once_each(cls, levels: list[str]) -> list[str]:
        """A level named twice (or once more in other capitals: a bot's words are matched to levels without
        regard to case) makes the order, and so under- and over-triage, ambiguous."""
        seen: dict[str, str] = {}
        for level in levels:
            if not level.strip():
                raise ValueError("a level is empty; name each level")
            first = seen.get(level.casefold())
            seen.setdefault(level.casefold(), level)
            if first is not None:
                also = (
                    "" if first == level else f" ('{first}' too: levels are matched without regard to case)"
                )
                raise ValueError(f"'{level}' is listed twice{also}; name each level once, lowest first")
        return levels

    @model_validator(mode="after")
    def _critical_is_a_level(self) -> OutcomeConfig:
        if self.critical is not None and self.critical not in self.levels:
            raise FieldProblem(
                f"critical level '{self.critical}' is not one of levels {self.levels}", "critical"
            )
        self._check_sources()
        columns = [*self.levels, "no decision", "other"]
        for expected, row in self.harm_weights.items():
            if expected not in self.levels:
                raise FieldProblem(
                    f"harm_weights: '{expected}' is not one of levels {self.levels}", "harm_weights", expected
                )
            for actual, weight in row.items():
                at = ("harm_weights", expected, actual)
                if actual not in columns or actual == expected:
                    raise FieldProblem(
                        f"harm_weights.{expected}: '{actual}' must be another level, `no decision` or `other`",
                        *at,
                    )
                if weight < 0:
                    raise FieldProblem(f"harm_weights.{expected}.{actual}: a weight cannot be negative", *at)
        return self

    def _check_sources(self) -> None:
        sources = self.sources
        if not sources:
            raise FieldProblem("source: name at least one of state, messages, tool, judge", "source")
        if len(set(sources)) != len(sources):
            raise FieldProblem(f"source lists a source twice: {sources}", "source")
        if "tool" in sources and self.tool is None:
            raise FieldProblem(
                "source `tool` needs `tool: {call: TOOL.ARGUMENT}` (e.g. book_appointment.urgency)", "source"
            )
        if self.messages is not None:
            problems = check_phrases(self.messages.phrases, list(self.levels), "messages.phrases")
            if problems:
                raise FieldProblem("; ".join(problems), "messages", "phrases")
        problems = check_phrases(self.red_flags, list(self.levels), "red_flags")
        if problems:
            raise FieldProblem("; ".join(problems), "red_flags")
        for index, pattern in enumerate(self.red_flags_ignore):
            try:
                compile_pattern(pattern, field_path(("red_flags_ignore", index)))
            except ValueError as exc:
                raise FieldProblem(str(exc), "red_flags_ignore", index) from None
        if self.tool is not None:
            wrong = {key: v for key, v in self.tool.values.items() if v not in self.levels}
            if wrong:
                raise FieldProblem(
                    f"tool.values: {', '.join(sorted(set(wrong.values())))} not among the outcome levels "
                    f"{self.levels}",
                    "tool",
                    "values",
                    next(iter(wrong)),
                )


class HeldOutConfig(_Strict):
    """`held_out: {fraction: 0.2, seed: 0}`: exactly that share of the vignettes without a `split` of their
    own, rounded (the lowest seeded hashes of their ids: the same every run, config/factors.py) is held out."""

    fraction: float = Field(gt=0, lt=1)
    seed: int = 0


# Repeats per scenario, at most (`runs`); a record's `repeat` is below it (record/models.py).
MAX_RUNS = 10_000


class Suite(BuiltModel):
    name: str = "suite"
    description: str | None = None
    scenarios: ScenarioSelection = Field(default_factory=ScenarioSelection)
    bot: AnyBot
    user: UserConfig = Field(default_factory=UserConfig)
    judges: JudgesConfig = Field(default_factory=JudgesConfig)
    # Repeats per scenario. Far beyond any study (hundreds) is a typo: the run's list of conversation ids
    # alone filled memory (runs: 1e30 hung `run` with no output).
    runs: int = Field(default=1, ge=1, le=MAX_RUNS)
    concurrency: int = Field(default=8, ge=1, le=10_000)  # more workers than this is a typo, not a plan
    seed: int = 0
    outcome: OutcomeConfig | None = None
    # Scenarios with this tag are listed as bugs in reports on any failure, never averaged away.
    high_stakes_tag: str | None = None
    providers: dict[str, ProviderSettings] = Field(default_factory=empty_dict)
    cache: CacheConfig | None = None
    # Keep each provider/bot raw request and response next to the turn, for debugging.
    record_raw: bool = True
    # Bot (and simulated-user) variants to compare on the same scenarios; see docs/matrix.md.
    matrix: MatrixConfig | None = None
    # Persona factors crossed with the scenarios (simulator/config/factors.py); the first level is the reference.
    factors: dict[str, list[Any]] = Field(default_factory=empty_dict)
    factor_design: Literal["full", "fractional", "one_at_a_time"] = "full"
    # Behavioural relations between variants: invariance, directional, minimum functionality
    # (simulator/config/relations.py, docs/relations.md).
    relations: list[Relation] = Field(default_factory=empty_list)
    # A sealed held-out set chosen by a seeded hash of each base id (docs/held-out.md).
    held_out: HeldOutConfig | None = None
    # A red-team pack crossed with the scenarios (simulator/config/redteam.py, docs/redteam.md).
    redteam: RedTeamConfig | None = None
    # Tools over a state dict that the bot (and the simulated user) act on: docs/environment.md.
    environment: EnvironmentSpec | None = None
    # Checks on what the bot did, for every scenario: tool calls, claims vs actions (docs/tool-checks.md).
    tool_checks: ToolChecksConfig | None = None

    @model_validator(mode="after")
    def _valid_factors(self) -> Suite:
        from simulator.config.factors import levels_of

        for name, entries in self.factors.items():
            try:
                levels_of(entries)  # the shape; style names are checked against the catalogue by load_suite
            except ValueError as exc:
                raise FieldProblem(f"factor '{name}': {exc}", "factors", name) from exc
        if self.user.models is not None and "simulator" in self.factors:
            raise FieldProblem(
                "factor 'simulator' is reserved for user.models (every scenario under each simulated user); "
                "rename the factor",
                "factors",
                "simulator",
            )
        ids = [r.id for r in self.relations]
        again = next((n for n, i in enumerate(ids) if i in ids[:n]), None)
        if again is not None:
            raise FieldProblem(
                f"relation ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}",
                "relations",
                again,
                "id",
            )
        for index, relation in enumerate(self.relations):
            if relation.factor is not None and relation.factor not in self.factors:
                known = ", ".join(self.factors) or "none"
                raise FieldProblem(
                    f"relation '{relation.id}' compares factor '{relation.factor}', which the suite does not "
                    f"declare (factors: {known})",
                    "relations",
                    index,
                    "factor",
                )
            if relation.kind in ("directional", "invariance") and self.outcome is None:
                raise FieldProblem(
                    f"relation '{relation.id}' compares outcomes: declare the suite's `outcome`",
                    "relations",
                    index,
                    "kind",
                )
        return self

    _base_dir: Path = PrivateAttr(default=Path("."))
    _file: Path | None = PrivateAttr(default=None)
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)
    # Scenarios given in code (simulator.run(..., scenarios=[...])): used instead of `scenarios.paths`.
    _inline: list[Scenario] | None = PrivateAttr(default=None)
    # Fields a run's option set after loading (`judges.model` -> `judge_model`): their problems name it.
    _given: dict[str, str] = PrivateAttr(default_factory=dict)

    def scenarios_to_run(
        self,
        tags: list[str] | None = None,
        *,
        ids: Collection[str] | None = None,
        files: list[Path] | None = None,
    ) -> list[Scenario]:
        """The one answer to "which scenarios does this suite run?": its scenario files (or the scenarios
        given in code), kept by tag, crossed with its persona factors (every variant, with its stable id).

        `tags`: default the suite's `scenarios.tags`. `ids`: only these scenarios (a resumed or re-judged
        run's recorded ones, whatever the tags were when it started: tags are then not applied). `files`:
        read these scenario files instead of `scenarios.paths` (a stored run's recorded files)."""
        from simulator.config.factors import suite_scenarios

        if ids is not None:
            wanted = set(ids)
            return [s for s in suite_scenarios(self, None, files) if s.id in wanted]
        return suite_scenarios(self, self.scenarios.tags if tags is None else tags, files)

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

    def named_paths(self, field: Literal["scenarios", "judges"]) -> list[Path]:
        """The files and folders `scenarios.paths` or `judges.paths` names, resolved; one UserError naming the
        suite's line and field of each that reaches nothing (never a bare path with no field to fix)."""
        problems = self.missing_paths(field)
        if problems:
            raise UserError("invalid suite file", problems)
        return [self.resolve(written) for written in getattr(self, field).paths]

    def missing_paths(self, field: Literal["scenarios", "judges"]) -> list[Problem]:
        """A problem for each path of `scenarios.paths` or `judges.paths` that reaches no file or folder."""
        return [
            Problem(
                str(self._file or "suite"),
                f"'{written}' is not there (looked for {self.resolve(written)}); fix the path (a relative "
                "path starts at the suite's folder)",
                self.line_of(field, "paths", index),
                field_path((field, "paths", index)),
            )
            for index, written in enumerate(getattr(self, field).paths)
            if missing(self.resolve(written))
        ]

    def provider_settings(self, provider: str) -> ProviderSettings:
        return self.providers.get(provider, ProviderSettings())

    def line_of(self, *loc: str | int) -> int | None:
        """The suite file's line of a field (or of its nearest ancestor), for errors found after loading."""
        return LocatedYAML(path=self._file or Path("suite"), data=None, lines=self._lines).line_of(loc)


def _provider_name_problems(source: LocatedYAML) -> list[Problem]:
    """`providers:` keys must be provider names: a misspelt one (`opnai`) would silently configure nothing."""
    providers = source.data.get("providers") if isinstance(source.data, dict) else None
    if not isinstance(providers, dict):
        return []
    problems = []
    for name in providers:
        if name in PROVIDERS:
            continue
        hint = did_you_mean(name, PROVIDERS) or f"use one of: {', '.join(PROVIDERS)}"
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
    from simulator.config.factors import levels_of
    from simulator.config.styles import suite_styles

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


def _tool_name_problems(suite: Suite, source: LocatedYAML) -> list[Problem]:
    """The suite's tool checks must name the environment's tools (a typo would fail every conversation)."""
    assert suite.environment is not None
    bot, user = list(suite.environment.tools), list(suite.environment.user_tools)
    problems = []
    for index, check in enumerate(suite.tool_checks.checks if suite.tool_checks else []):
        why = unknown_tool(check, bot, user)
        if why is not None:
            loc = ("tool_checks", "checks", index)
            problems.append(Problem(str(source.path), why, source.line_of(loc), field_path(loc)))
    return problems


def _claim_tool_problems(suite: Suite, source: LocatedYAML) -> list[Problem]:
    """A claim rule must name tools the environment or the bot declares (one it names outright could never
    be backed, so every claim would fail); a bot whose tools only its code knows is not checked here."""
    rules = suite.tool_checks.claims if suite.tool_checks else None
    declared = suite.bot.declared_tools()
    if not rules or (suite.environment is None and declared is None):
        return []
    known = sorted((set(suite.environment.tools) if suite.environment else set()) | (declared or set()))
    problems = []
    for index, rule in enumerate(rules):
        why = unknown_claim_tools(rule, known)
        if why is not None:
            loc = ("tool_checks", "claims", index)
            field = field_path((*loc, "tool" if rule.tool else "tools"))
            problems.append(Problem(str(source.path), why, source.line_of(loc), field))
    return problems


_OPTIONS = "the run's options"


def _blamed_on_override(problem: Problem, overrides: dict[str, Any], overridden: str) -> Problem:
    """A problem with a value the run was given (`--runs 20000`, `simulator.run(..., seed=...)`) names
    that option, never the suite file's line (or the Suite object's field) of the value it replaced."""
    key = (problem.field or "").split(".")[0].split("[")[0]
    return _as_option(problem, key, overridden) if key in overrides else problem


def _as_option(problem: Problem, key: str, overridden: str) -> Problem:
    """`problem` said of the run's option `key` (`--judge-model`, or `judge_model=` in Python)."""
    said = f"as given to this run ({option_forms(key)}; it overrides {overridden}): {problem.message}"
    return Problem(_OPTIONS, said, field=problem.field)


def blamed_on_option(problem: Problem, suite: Suite) -> Problem:
    """A problem found after loading in a field a run's option replaced (`--judge-model` sets judges.model,
    `--user-model` user.model) names the option, never the suite file's line of the value it replaced."""
    field = problem.field or ""
    for given, key in suite._given.items():
        if field == given or field.startswith((given + ".", given + "[")):
            return _as_option(problem, key, suite.file.name if suite.file else "the Suite object's values")
    return problem


def given_by_option(suite: Suite, field: str, key: str) -> None:
    """Record that the run's option `key` set `field` (dotted), so its problems name the option."""
    suite._given[field] = key


def with_run_options(suite: Suite, options: dict[str, Any]) -> Suite:
    """A copy of `suite` (built in code), checked again, with the run's options (`runs=`, `seed=` ... given
    to `simulator.run`) in place of its own, checked as a file's overrides are: a bad one is a problem
    naming the option, in the same words."""
    copy = suite.model_copy(deep=True)
    overridden = "the Suite object's values"
    source = LocatedYAML(path=Path("(the Suite object)"), data=None)
    # Checked even with no options: a field set after the Suite was built (`suite.runs = 0`) was never
    # validated, and reached the engine as it was (warnings=False: such a value is not the field's type).
    raw = copy.model_dump(warnings=False)
    checked, problems = validate_model(Suite, {**raw, **options}, source, given=options)
    if checked is None:
        blamed = [_blamed_on_override(p, options, overridden) for p in problems]
        title = "invalid options for this run" if options else "invalid Suite object"
        raise UserError(title, blamed)
    fresh = checked.model_dump()
    for key in set(options) | {k for k in raw if raw[k] != fresh.get(k)}:  # a value validation converted
        setattr(copy, key, getattr(checked, key))
    return copy


def load_suite(path: Path, overrides: dict[str, Any] | None = None, *, text: str | None = None) -> Suite:
    """Load a suite file; `overrides` (from CLI flags) replace top-level keys before validation. `text`:
    the suite as it would be written to `path` (not yet written: `new suite` checks it first)."""
    if text is None and missing(path):  # a folder, FIFO or link loop is read, and refused saying what it is
        raise UserError(f"{path}: no such suite file; pass the path to a suite.yaml")
    try:
        source = load_yaml(path) if text is None else parse_yaml(text, path)
    except YAMLProblem as exc:
        raise UserError("invalid suite file", [exc.problem]) from exc
    if not isinstance(source.data, dict):
        empty = "the file is empty (or holds only comments); " if source.data is None else ""
        raise UserError(
            "invalid suite file", [Problem(str(path), f"{empty}a suite must be a mapping (bot:, user:, ...)")]
        )
    data = {**source.data, **(overrides or {})}
    suite, problems = validate_model(Suite, data, source, given=overrides or {})
    problems = [_blamed_on_override(p, overrides or {}, path.name) for p in problems]
    problems += _provider_name_problems(source) + _judges_problems(source)
    if suite is not None:
        problems += _claim_tool_problems(suite, source)
    if suite is not None and suite.environment is not None:
        problems += check_environment_functions(suite.environment, str(path), source.line_of)
        problems += _tool_name_problems(suite, source)
        if not suite.bot.has(ENVIRONMENT):  # its channel carries no environment API
            able = kinds_with(ENVIRONMENT)
            problems.append(
                Problem(
                    str(path),
                    f"a {suite.bot.type} bot cannot call the environment's tools: use a "
                    f"{', '.join(able[:-1])} or {able[-1]} bot with `environment:`, or remove it",
                    source.line_of(("environment",)),
                    "environment",
                )
            )
    if suite is not None and suite.environment is None and getattr(suite.bot, "environment_mcp", False):
        problems.append(
            Problem(
                str(path),
                "bot.environment_mcp serves the suite's environment over MCP, and this suite has none: "
                "add an `environment:` or remove environment_mcp",
                source.line_of(("bot", "environment_mcp")),
                "bot.environment_mcp",
            )
        )
    if suite is None or problems:
        options = all(p.file == _OPTIONS for p in problems) and problems
        raise UserError("invalid options for this run" if options else "invalid suite file", problems)
    suite._base_dir = path.parent.resolve()
    suite._file = path
    _check_factor_styles(suite, source)
    expand_matrix(suite, source)  # every cell must be a valid suite before anything runs
    suite._lines = source.lines
    return suite
