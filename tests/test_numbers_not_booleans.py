"""A boolean where a number goes is refused with the file, line and field: pydantic reads `true` as 1 and
`false` as 0, so `runs: true` ran each scenario once, `max_turns: false` was refused only by its lower
bound and `timeout_s: true` gave the bot one second. The rule is one mechanism on the base model
(simulator/models.py); these tests try it on settings of every file kind, in lists, dict keys, optionals
and nested models, through `validate`, `run` and the Python API, and check that every int and float of every
StrictModel in the package carries it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.cli import main
from simulator.errors import UserError
from tests.support.projects import (
    BOT,
    CRITERION,
    SCENARIO,
    SCENARIOS,
    every_strict_model,
    one_scenario_project,
)

SUITE = SCENARIOS


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], where: str, field: str) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert where in err and f"[{field}]" in err, err
    assert "expected a number, got " in err and "write the number itself" in err, err
    return err


# (what the suite says, what the scenario says, what the criterion says, the file and field named)
CASES: dict[str, tuple[str, str, str | None, str, str]] = {
    "runs: true": (SUITE + BOT + "runs: true\n", SCENARIO, None, "suite.yaml:3", "runs"),
    "runs: false": (SUITE + BOT + "runs: false\n", SCENARIO, None, "suite.yaml:3", "runs"),
    "user temperature": (SUITE + BOT + "user: {model: offline, temperature: true}\n", SCENARIO, None,
                         "suite.yaml:3", "user.temperature"),
    "judges max_tokens": (SUITE + BOT + "judges: {max_tokens: true}\n", SCENARIO, None, "suite.yaml:3",
                          "judges.max_tokens"),
    "bot timeout": (SUITE + "bot: {type: python, factory: 'json:JSONEncoder', timeout_s: true}\n", SCENARIO, None,
                    "suite.yaml:2", "bot.timeout_s"),
    "max_turns: false": (SUITE + BOT, SCENARIO + "max_turns: false\n", None, "s1.yaml:5", "max_turns"),
    "volunteers": (SUITE + BOT, SCENARIO + "volunteers: true\n", None, "s1.yaml:5", "volunteers"),
    "a list of numbers": (SUITE + BOT, SCENARIO + "facts: [a, b]\nkey_facts: [1, true]\n", None, "s1.yaml:6",
                          "key_facts[2]"),
    "criterion points": (SUITE + BOT, SCENARIO, CRITERION + "points: true\n", "c1.yaml:5", "points"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_boolean_where_a_number_goes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    suite_text, scenario, criterion, where, field = CASES[name]
    suite = one_scenario_project(tmp_path, suite_text, scenario, criterion)
    args = {
        "validate": ["validate", str(suite)],
        "run": ["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"],
    }[command]
    _refused(capsys, args, where, field)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "suite_text, scenario",
    [
        (SUITE + BOT + "runs: 2\n", SCENARIO + "max_turns: 3\nfacts: [a, b]\nkey_facts: [1, 2]\n"),
        (SUITE + BOT + "user: {model: offline, temperature: 0}\n", SCENARIO + "volunteers: 0\n"),
        (SUITE + BOT + "runs: '2'\n", SCENARIO),  # a quoted number is still read as a number
        (SUITE + BOT + "judges: {temperature: null}\n", SCENARIO),
    ],
)
def test_numbers_and_real_booleans_are_still_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suite_text: str, scenario: str
) -> None:
    suite = one_scenario_project(tmp_path, suite_text, scenario)
    assert main(["validate", str(suite)]) == 0, capsys.readouterr().err


def test_a_setting_that_is_a_boolean_keeps_taking_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = one_scenario_project(tmp_path, SUITE.replace("]}", "], include_drafts: true}") + BOT)
    assert main(["validate", str(suite)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    "build",
    [
        lambda: simulator.Suite(runs=True, bot={"type": "python", "factory": "json:JSONEncoder"}),
        lambda: simulator.Scenario(id="s", persona="p", goal="g", max_turns=False),
        lambda: simulator.Scenario(id="s", persona="p", goal="g", facts=["a"], key_facts=[True]),
    ],
)
def test_the_python_api_refuses_a_boolean_where_a_number_goes(build: Any) -> None:
    with pytest.raises(UserError, match=r"expected a number, got (true|false)"):
        build()


def _unguarded(schema: Any, path: str, guarded: bool = False) -> list[str]:
    """The paths of int and float schemas not checked for a boolean first, or checked twice (a built model's
    schema reused in another's must not be wrapped again)."""
    if isinstance(schema, list | tuple):
        return [p for i, item in enumerate(schema) for p in _unguarded(item, f"{path}[{i}]", guarded)]
    if not isinstance(schema, dict):
        return []
    if schema.get("type") in ("int", "float"):
        return [] if guarded else [path]
    if schema.get("type") == "dataclass":
        return []  # a plain dataclass: a result the code builds (stats.basic.Rate), never read from a file
    inner_guarded = (
        schema.get("type") == "function-before"
        and getattr(schema.get("function", {}).get("function"), "__name__", "") == "_refuse_boolean"
    )
    found = [f"{path} (checked twice)"] if inner_guarded and guarded else []
    for key, value in schema.items():
        if key in ("serialization", "metadata", "json_schema_input_schema", "computed_fields"):
            continue  # how a value is written out, not read
        found += _unguarded(value, f"{path}.{key}", inner_guarded and key == "schema")
    return found


def test_every_number_of_every_strict_model_refuses_a_boolean() -> None:
    models = every_strict_model()
    assert len(models) > 60  # the walk found the package's models
    unguarded = {}
    for cls in models:
        cls.model_rebuild(force=True)  # after its nested models were built: their schemas are reused
        paths = _unguarded(cls.__pydantic_core_schema__, cls.__name__)
        if paths:
            unguarded[f"{cls.__module__}.{cls.__name__}"] = paths[:3]
    assert not unguarded, unguarded


INFINITE = {
    "user temperature .inf": ("user: {model: offline, temperature: .inf}\n", "user.temperature"),
    "judges temperature 1e400": ("judges: {temperature: 1e400}\n", "judges.temperature"),
    "provider timeout .inf": ("providers: {openai: {timeout_s: .inf}}\n", "providers.openai.timeout_s"),
    "provider rpm .nan": ("providers: {openai: {rpm: .nan}}\n", "providers.openai.rpm"),
    "provider backoff .inf": (
        "providers: {openai: {backoff_max_s: .inf}}\n",
        "providers.openai.backoff_max_s",
    ),
    "provider tpm -.inf": ("providers: {openai: {tpm: -.inf}}\n", "providers.openai.tpm"),
}


@pytest.mark.parametrize("name", sorted(INFINITE))
def test_infinity_or_nan_where_a_number_goes_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """YAML reads `.inf`, `.nan` and `1e400` as floats: a rate, a timeout or a temperature of infinity
    passed `validate` and reached the provider."""
    body, field = INFINITE[name]
    suite = one_scenario_project(tmp_path, SUITE + BOT + body)
    assert main(["validate", str(suite)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"suite.yaml:3 [{field}]" in err and "finite number" in err, err


def test_a_computed_result_may_still_be_undefined() -> None:
    """A result (ResultModel) is computed, never written: a ratio of nothing stays NaN, as before."""
    from simulator.models import ResultModel

    class Ratio(ResultModel):
        value: float

    assert Ratio(value=float("nan")).value != Ratio(value=float("nan")).value  # NaN
