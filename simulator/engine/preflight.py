"""What `run` would refuse, found before it starts: the one check `validate` and `run` share.

`validate` used to parse files only, so a suite whose bot factory cannot be imported, whose bot URL has no
host, whose models name an unknown provider, whose prompt file is binary or whose vocabulary is an alias bomb
passed `validate` and failed later in `run`. `preflight_problems` builds each of those the way a run does,
and reports every problem with the suite file, line and field.
"""

from __future__ import annotations

__all__ = ["expected_problems", "preflight", "preflight_problems"]

import functools
from collections.abc import Callable, Iterator
from typing import Any

from simulator.config.bot_kinds import engine_model
from simulator.config.suite import Suite, blamed_on_option
from simulator.config.yamlfile import YAMLProblem
from simulator.errors import Problem, UserError, field_path
from simulator.judging.code_checks import ENVIRONMENT_KEY, STOP_KEYS

_SPECIAL_USERS = ("auto", "offline", "scripted", "real")


def _models(suite: Suite) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Every model string the suite names, with its field path."""
    bot_model = engine_model(suite.bot)
    if bot_model is not None:
        yield ("bot", "model"), bot_model
    if suite.user.model not in _SPECIAL_USERS:
        yield ("user", "model"), suite.user.model
    if suite.user.fidelity.model:
        yield ("user", "fidelity", "model"), suite.user.fidelity.model
    if suite.judges.model:
        yield ("judges", "model"), suite.judges.model
    for index, model in enumerate(suite.judges.models):
        yield ("judges", "models", index), model


def _checks(suite: Suite) -> Iterator[tuple[tuple[str | int, ...], Callable[[], Any]]]:
    from simulator.config.providers import split_model
    from simulator.config.wire import wire_checks

    for loc, check in suite.bot.preflight_checks(suite.resolve):  # the bot's kind knows what to try
        yield ("bot", *loc), check
    yield from wire_checks(suite.bot, ("bot",))  # every URL and header, whatever the kind
    for name, settings in suite.providers.items():
        yield from wire_checks(settings, ("providers", name))
    for index, written in enumerate(suite.judges.paths):
        yield ("judges", "paths", index), functools.partial(_judges_path, suite, written)
    if suite.scenarios.tags:
        yield ("scenarios", "tags"), functools.partial(_tagged, suite)
    yield ("user", "styles"), functools.partial(_styles, suite)
    for loc, model in _models(suite):
        yield loc, functools.partial(split_model, model)
    if suite.user.vocabulary:
        from simulator.config.vocabulary import load_vocabulary

        path = suite.resolve(suite.user.vocabulary)
        yield ("user", "vocabulary"), lambda: load_vocabulary(path)
    if suite.outcome is not None and "messages" in suite.outcome.sources:
        yield ("outcome", "source"), functools.partial(_level_phrases, suite)


def _judges_path(suite: Suite, path: str) -> None:
    """A judges path holds criteria only: the suite's own folder (`.`), or a folder of scenarios, is one
    error naming the path, not one per file read as a broken criterion."""
    from simulator.judging.criteria import not_criteria

    found = not_criteria(suite.resolve(path))
    if found:
        own = " is the suite's own folder: it" if suite.resolve(path).resolve() == suite.base_dir else ""
        raise UserError(
            f"judges path '{path}'{own} holds {found}, not criteria; point judges.paths at the folder of "
            "criteria (e.g. judges.paths: [judges]) and keep scenarios and suites out of it"
        )


def _tagged(suite: Suite) -> None:
    """Some scenario has one of `scenarios.tags` (a scenario file's own problems are reported where it is
    loaded)."""
    from simulator.config.loading import by_tags, load_scenarios

    try:
        scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    except UserError:
        return
    by_tags(scenarios, suite.scenarios.tags)


def _styles(suite: Suite) -> None:
    """Every persona style a scenario names is in the suite's catalogue (`run` refuses one that is not, so
    `validate` must too); a scenario file's own problems are reported where it is loaded."""
    from simulator.config.factors import check_scenario_styles
    from simulator.config.loading import load_scenarios
    from simulator.config.styles import suite_styles

    if getattr(suite, "_inline", None) is not None:
        return  # scenarios given in code are checked when the run plans them
    try:
        scenarios = load_scenarios(suite.named_paths("scenarios"))
    except UserError:
        return
    if any(s.styles for s in scenarios):
        check_scenario_styles(scenarios, suite_styles(suite))


def _level_phrases(suite: Suite) -> None:
    """The `messages` outcome source's level phrases (a vocabulary that does not load is reported by its
    own check)."""
    from simulator.config.vocabulary import load_vocabulary
    from simulator.judging.outcome_setup import phrase_reader

    if suite.user.vocabulary:
        try:
            load_vocabulary(suite.resolve(suite.user.vocabulary))
        except UserError:
            return
    phrase_reader(suite)


def preflight_problems(suite: Suite) -> list[Problem]:
    """Every problem `run` would meet building the suite's bot, models, prompt and vocabulary (in every
    cell of a matrix suite), each once."""
    if suite.matrix is None:
        return _problems(suite)
    from simulator.config.matrix import expand_matrix

    found: dict[str, Problem] = {}
    for cell in expand_matrix(suite):
        for problem in _problems(cell.suite):
            found.setdefault(str(problem), problem)
    return list(found.values())


def _expected_problems(suite: Suite) -> list[Problem]:
    """`expected_problems` for every scenario the suite runs."""
    from simulator.config.factors import suite_scenarios

    try:
        scenarios = suite_scenarios(suite, suite.scenarios.tags)
    except UserError:
        return []  # the scenario files' own problems are reported where they are loaded
    return expected_problems(suite, scenarios)


def expected_problems(suite: Suite, scenarios: list[Any]) -> list[Problem]:
    """Each scenario's `expected`: an outcome level the suite declares, a state key the bot sets, and never
    a boolean in quotes (`"false"` would never equal the bot's `false`). The one check `validate`, `run`
    and the desk's editor make."""
    problems = []
    outcome = suite.outcome
    declared = suite.bot.declared_state_keys()  # None when only the bot's code knows
    for scenario in scenarios:
        file = str(scenario._source or scenario.id)
        for key, value in scenario.expected.items():
            # `environment` holds paths of the environment's final state, compared there (not bot state).
            if (
                declared is not None
                and key not in declared
                and not (outcome is not None and key == outcome.key and outcome.sources != ["state"])
                and key not in (*STOP_KEYS, "stop_reason", ENVIRONMENT_KEY)
            ):
                sets = (
                    f"only {', '.join(sorted(declared))}"
                    if declared
                    else "no state (it has no decision_tool)"
                )
                message = f"expected {key}: the bot never sets it (this {suite.bot.type} bot sets {sets}); fix the key"
                problems.append(Problem(file, message, scenario.line_of("expected", key), f"expected.{key}"))
            elif outcome is not None and key == outcome.key and outcome.not_a_level(value):
                message = str(outcome.not_a_level(value))
                problems.append(Problem(file, message, scenario.line_of("expected", key), f"expected.{key}"))
            elif isinstance(value, str) and value.strip().lower() in ("true", "false"):
                message = (
                    f"expected {key} is the text '{value}'; write {value.strip().lower()} without quotes"
                )
                problems.append(Problem(file, message, scenario.line_of("expected", key), f"expected.{key}"))
    return problems


def _problems(suite: Suite) -> list[Problem]:
    file = str(suite.file or "suite")
    problems: list[Problem] = _expected_problems(suite)
    for loc, check in _checks(suite):
        field = field_path(loc)
        try:
            check()
        except YAMLProblem as exc:
            problems.append(Problem(exc.problem.file, exc.problem.message, exc.problem.line, field))
        except UserError as exc:
            if exc.problems:  # problems inside the file the field names: say which field named it
                problems += [Problem(p.file, p.message, p.line, p.field or field) for p in exc.problems]
            else:
                problems.append(blamed_on_option(Problem(file, str(exc), suite.line_of(*loc), field), suite))
    return list({str(p): p for p in problems}.values())  # a kind's own check and the wire's may agree


def preflight(suite: Suite) -> None:
    """Raise one UserError listing what `run` would refuse (see `preflight_problems`)."""
    problems = preflight_problems(suite)
    if problems:
        raise UserError("the suite cannot run", problems)
