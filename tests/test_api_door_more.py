"""The Python API's door, second pass (issue: seven classes a tester reproduced). The caller's RunOptions is
never changed and every field of it is checked; a Suite changed after it was built is checked again; an
empty scenario_ids, a bad or colliding compare name, an unknown scenario or cell, a positional field and a
bot class that is no bot are refused at the door; advice is in Python's words and never a call that raises."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import simulator
from simulator.api import execute, prepare
from simulator.api.options import RunOptions, parse_shard
from simulator.record.folder import RunFolder

OUTCOME = {
    "key": "triage_level",
    "levels": ["self_care", "gp", "urgent", "emergency"],
    "critical": "emergency",
}
CHEST = {
    "id": "chest",
    "persona": "A man.",
    "goal": "Ask about chest pain.",
    "facts": ["Pain for two hours."],
    "expected": {"triage_level": "emergency"},
}
THROAT = {
    "id": "throat",
    "persona": "A student.",
    "goal": "Ask about a sore throat.",
    "facts": ["No fever."],
    "expected": {"triage_level": "self_care"},
}
SCENARIOS = [CHEST, THROAT]


def _suite(**fields: Any) -> simulator.Suite:
    base: dict[str, Any] = {
        "bot": {"type": "python", "factory": "x.y:z"},
        "user": {"model": "offline"},
        "outcome": OUTCOME,
        "runs": 1,
    }
    return simulator.Suite(**{**base, **fields})


def good(text: str) -> simulator.Reply:
    return simulator.Reply(["Call 999."], closed=True, state={"triage_level": "emergency"})


def other(text: str) -> simulator.Reply:
    return simulator.Reply(["See your GP."], closed=True, state={"triage_level": "gp"})


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a run without out= writes runs/<id> here


def _refused(call: Callable[[], Any], *named: str) -> str:
    """The call raises one UserError line naming each of `named`; its message."""
    with pytest.raises(simulator.UserError) as caught:
        call()
    assert not isinstance(caught.value, ValidationError | TypeError | AttributeError | KeyError)
    message = str(caught.value)
    assert "\n" not in message and "ValidationError" not in message, message
    for word in named:
        assert word in message, message
    return message


def _fields(options: simulator.RunOptions) -> dict[str, Any]:
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}


# 1. The caller's RunOptions is never changed.


def test_run_compare_and_resume_never_change_the_callers_options(tmp_path: Path) -> None:
    given = simulator.RunOptions(progress=False)
    before = _fields(given)
    first = simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "a", options=given)
    assert _fields(given) == before
    simulator.compare(_suite(), bots=[good], scenarios=SCENARIOS, out=tmp_path / "m", options=given)
    assert _fields(given) == before
    with pytest.raises(simulator.UserError, match="given in code"):
        simulator.resume(first.folder, options=given)  # refused after its options were chosen
    assert _fields(given) == before
    later = simulator.run(_suite(), bot=good, scenarios=SCENARIOS, options=given)
    assert later.folder != first.folder  # never into the folder resume was given
    assert len(RunFolder.open(first.folder).read_manifest().sessions) == 1


def test_a_string_out_in_options_is_a_folder(tmp_path: Path) -> None:
    options = simulator.RunOptions(out=str(tmp_path / "s"), progress=False)
    result = simulator.run(_suite(), bot=good, scenarios=SCENARIOS, options=options)
    assert result.folder == tmp_path / "s" and options.out == str(tmp_path / "s")


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 5},
        {"runs": 2},
        {"scenarios": [CHEST]},
        {"bot": other},
    ],
    ids=["seed", "runs", "scenarios", "bot"],
)
def test_resume_options_into_another_suites_folder_are_refused(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "a", progress=False)
    suite = _suite(**{k: v for k, v in change.items() if k in ("seed", "runs")})
    options = simulator.RunOptions(out=tmp_path / "a", resume=True, progress=False)
    _refused(
        lambda: simulator.run(
            suite, bot=change.get("bot", good), scenarios=change.get("scenarios", SCENARIOS), options=options
        ),
        str(tmp_path / "a"),
        "names a run made from",
        "a new run (options.resume=False and another out)",
    )
    assert len(RunFolder.open(tmp_path / "a").read_manifest().sessions) == 1


def test_resume_options_into_another_suites_folder_advise_only_what_works(tmp_path: Path) -> None:
    simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "inline", progress=False)
    simulator.run(
        _suite(), bot=good, scenarios=_file_scenarios(tmp_path), out=tmp_path / "files", progress=False
    )
    for folder, finishable in (("inline", False), ("files", True)):
        options = simulator.RunOptions(out=tmp_path / folder, resume=True, progress=False)
        message = _refused(
            lambda o=options: simulator.run(_suite(seed=9), bot=good, scenarios=SCENARIOS, options=o)
        )
        assert ("simulator.resume(" in message) == finishable, message
    assert isinstance(simulator.resume(tmp_path / "files", bot=good), simulator.Result)  # the advice works


def test_resume_options_into_the_same_suites_folder_still_finish_it(tmp_path: Path) -> None:
    simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "a", progress=False)
    options = simulator.RunOptions(out=tmp_path / "a", resume=True, progress=False)
    again = simulator.run(_suite(), bot=good, scenarios=SCENARIOS, options=options)
    assert again.session is not None and again.session.skipped == 2 and again.session.finished == 0


# 2. A Suite changed after it was built is checked again; an empty scenario_ids is refused.

CHANGED: dict[str, tuple[Callable[[simulator.Suite], None], str]] = {
    "runs='abc'": (lambda s: setattr(s, "runs", "abc"), "runs"),
    "runs=0": (lambda s: setattr(s, "runs", 0), "runs"),
    "runs=None": (lambda s: setattr(s, "runs", None), "runs"),
    "seed='x'": (lambda s: setattr(s, "seed", "x"), "seed"),
    "user.model=5": (lambda s: setattr(s.user, "model", 5), "user.model"),
}


@pytest.mark.parametrize("case", sorted(CHANGED))
def test_a_suite_changed_after_it_was_built_is_checked_again(case: str) -> None:
    change, field = CHANGED[case]
    suite = _suite()
    change(suite)
    _refused(lambda: simulator.run(suite, bot=good, scenarios=SCENARIOS), "Suite object", field)
    _refused(lambda: simulator.compare(suite, bots=[good], scenarios=SCENARIOS), "Suite object", field)
    assert not Path("runs").exists()


def test_a_changed_value_validation_converts_is_run_as_converted() -> None:
    suite = _suite()
    suite.runs = "2"  # type: ignore[assignment]
    result = simulator.run(suite, bot=good, scenarios=SCENARIOS, progress=False)
    assert result.session is not None and result.session.finished == 4
    assert suite.runs == "2"  # the caller's object is never changed


@pytest.mark.parametrize("empty", [[], (), set()], ids=["list", "tuple", "set"])
def test_an_empty_scenario_ids_is_refused(empty: Any) -> None:
    _refused(
        lambda: simulator.run(_suite(), bot=good, scenarios=SCENARIOS, scenario_ids=empty), "scenario_ids"
    )
    _refused(
        lambda: simulator.compare(_suite(), bots=[good], scenarios=SCENARIOS, scenario_ids=empty),
        "scenario_ids",
    )
    assert not Path("runs").exists()


# 3. Every RunOptions field is checked.

BAD_OPTIONS: dict[str, tuple[dict[str, Any], str]] = {
    "out=5": ({"out": 5}, "options.out"),
    "shard='1/2'": ({"shard": "1/2"}, "parse_shard"),
    "shard 3 of 2": ({"shard": parse_shard("2/2").model_copy(update={"index": 3})}, "options.shard"),
    "max_errors='x'": ({"max_errors": "x"}, "options.max_errors"),
    "max_errors=-1": ({"max_errors": -1}, "options.max_errors"),
    "max_errors=1.5": ({"max_errors": 1.5}, "options.max_errors"),
    "max_errors=nan": ({"max_errors": math.nan}, "options.max_errors"),
    "max_errors=True": ({"max_errors": True}, "options.max_errors"),
    "progress='no'": ({"progress": "no"}, "options.progress"),
    "resume='yes'": ({"resume": "yes"}, "options.resume"),
    "freeze_gc=1": ({"freeze_gc": 1}, "options.freeze_gc"),
    "backend='ray'": ({"backend": "ray"}, "options.backend"),
    "make_user=5": ({"make_user": 5}, "options.make_user"),
    "retry_errors without resume": ({"retry_errors": True}, "options.retry_errors"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_every_run_options_field_is_checked(case: str) -> None:
    fields, named = BAD_OPTIONS[case]
    options = simulator.RunOptions(**fields)
    _refused(lambda: simulator.run(_suite(), bot=good, scenarios=SCENARIOS, options=options), named)
    assert not Path("runs").exists()


def test_compare_refuses_options_resume() -> None:
    options = simulator.RunOptions(out=Path("m"), resume=True)
    _refused(
        lambda: simulator.compare(_suite(), bots=[good], scenarios=SCENARIOS, options=options),
        "options.resume",
        "simulator.resume(folder)",
    )


@pytest.mark.parametrize("max_errors", [None, 0, 3, 0.5, 10.0, math.inf])
def test_good_run_options_still_run(max_errors: float | None) -> None:
    options = simulator.RunOptions(max_errors=max_errors, progress=False)
    result = simulator.run(_suite(), bot=good, scenarios=SCENARIOS, options=options)
    assert result.session is not None and result.session.finished == 2


# 4. compare's names.


@pytest.mark.parametrize("key", ["../x", "a b", "", "-x", 1, ("a",)], ids=repr)
def test_a_bad_bot_name_is_refused_naming_it(key: Any) -> None:
    message = _refused(
        lambda: simulator.compare(_suite(), bots={key: good, "fine": other}, scenarios=SCENARIOS), "bots["
    )
    assert repr(key) in message and "letters, digits" in message
    assert not Path("runs").exists()


def test_a_bot_named_as_a_model_is_refused() -> None:
    suite = _suite(bot={"type": "chat", "model": "test:default", "system_prompt": "You triage."})
    _refused(
        lambda: simulator.compare(
            suite, bots={"openai-gpt-4.1-mini": good}, models=["openai:gpt-4.1-mini"], scenarios=SCENARIOS
        ),
        "'openai-gpt-4.1-mini'",
        "both",
    )


@pytest.mark.parametrize("model", ["good", "foo:bar", "good:"])
def test_compare_models_must_be_model_names(model: str) -> None:
    _refused(
        lambda: simulator.compare(_suite(), models=["openai:gpt-4.1-mini", model], scenarios=SCENARIOS),
        "models[1]",
        "provider",
    )


# 5. Result and Comparison; positional fields.


@pytest.fixture
def no_outcome(tmp_path: Path) -> simulator.Result:
    suite = simulator.Suite(bot={"type": "python", "factory": "x.y:z"}, user={"model": "offline"}, runs=1)
    return simulator.run(suite, bot=good, scenarios=SCENARIOS, out=tmp_path / "plain", progress=False)


@pytest.mark.parametrize("rate", ["under_triage", "critical_sensitivity"])
def test_an_outcome_rate_of_a_suite_without_outcome_is_a_user_error(
    no_outcome: simulator.Result, rate: str
) -> None:
    assert no_outcome.outcome is None
    _refused(lambda: getattr(no_outcome, rate), rate, "declares no outcome levels", "outcome=")


@pytest.mark.parametrize("typo", ["chset", "CHEST", "nothing", ""])
def test_scenario_status_refuses_an_unknown_id(no_outcome: simulator.Result, typo: str) -> None:
    message = _refused(lambda: no_outcome.scenario_status(typo), "'chest'", "'throat'")
    assert ("did you mean 'chest'" in message) == (typo in ("chset", "CHEST"))
    assert no_outcome.scenario_status("chest") == ["pass"]


@pytest.mark.parametrize("cell", ["nope", "G", 0])
def test_a_comparison_refuses_an_unknown_cell(tmp_path: Path, cell: Any) -> None:
    board = simulator.compare(
        _suite(), bots={"g": good, "o": other}, scenarios=SCENARIOS, out=tmp_path / "m", progress=False
    )
    _refused(lambda: board[cell], repr(cell), "'g', 'o'")
    assert board["g"].scenario_status("chest") == ["pass"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: simulator.Scenario("x"),
        lambda: simulator.Scenario("x", "persona", goal="g"),
        lambda: simulator.Suite("x"),
        lambda: simulator.Suite({"runs": 1}),
    ],
    ids=["Scenario(x)", "Scenario(x, p)", "Suite(x)", "Suite(mapping)"],
)
def test_models_built_in_code_refuse_positional_fields(build: Callable[[], Any]) -> None:
    _refused(build, "given by name", "simulator.")


# 6. Advice that works in Python.


def _file_scenarios(tmp_path: Path) -> list[Path]:
    import yaml

    paths = []
    for scenario in SCENARIOS:
        path = tmp_path / f"{scenario['id']}.yaml"
        path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
        paths.append(path)
    return paths


def test_a_taken_folder_is_advised_in_pythons_words(tmp_path: Path) -> None:
    files = _file_scenarios(tmp_path)
    simulator.run(_suite(), bot=good, scenarios=files, out=tmp_path / "a", progress=False)
    simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "inline", progress=False)
    simulator.compare(_suite(), bots=[good], scenarios=files, out=tmp_path / "m", progress=False)
    cases = [
        (lambda: simulator.run(_suite(), bot=good, scenarios=files, out=tmp_path / "a"), True),
        (lambda: simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "inline"), False),
        (lambda: simulator.compare(_suite(), bots=[good], scenarios=files, out=tmp_path / "m"), True),
        (lambda: simulator.compare(_suite(), bots=[good], scenarios=SCENARIOS, out=tmp_path / "a"), True),
    ]
    for call, finishable in cases:
        message = _refused(call, "already holds", "another out=")
        assert "--resume" not in message and "--out" not in message, message
        assert ("simulator.resume(" in message) == finishable, message
    done = simulator.resume(tmp_path / "a", bot=good)  # the advice works
    assert isinstance(done, simulator.Result)


def test_the_command_line_keeps_its_words_for_a_taken_folder(tmp_path: Path) -> None:
    simulator.run(_suite(), bot=good, scenarios=SCENARIOS, out=tmp_path / "a", progress=False)
    plan = prepare(_suite(), bot=good, scenarios=SCENARIOS)
    with pytest.raises(simulator.UserError) as caught:  # the command line's path: api.execute
        asyncio.run(execute(plan, RunOptions(out=tmp_path / "a", progress=False)))
    assert f"--resume {tmp_path / 'a'}" in str(caught.value) and "--out" in str(caught.value)


def test_resuming_a_matrix_of_bots_given_in_code(tmp_path: Path) -> None:
    files = _file_scenarios(tmp_path)
    board = simulator.compare(
        _suite(), bots={"g": good, "o": other}, scenarios=files, out=tmp_path / "m", progress=False
    )
    cell = board.path / "g" / "conversations.jsonl"
    cell.write_text(cell.read_text().splitlines()[0] + "\n")
    message = _refused(lambda: simulator.resume(board.path), "simulator.resume(folder, bot=")
    assert "resume=" not in message.replace("simulator.resume(", "")
    for wrong in ({"zzz": good}, {"g": good, "o": other, "G": good}):
        _refused(lambda w=wrong: simulator.resume(board.path, bot=w), "names no bot", "'g', 'o'")
    done = simulator.resume(board.path, bot={"g": good, "o": other})
    assert isinstance(done, simulator.Comparison) and done["g"].scenario_status("chest") == ["pass"]


@pytest.mark.parametrize("bot", ["foo:gpt-4", "nosuchprovider:model-1", "mistral:large"])
def test_an_unknown_provider_is_said_as_such(bot: str) -> None:
    _refused(
        lambda: simulator.run(_suite(), bot=bot, scenarios=SCENARIOS),
        f"unknown provider '{bot.split(':')[0]}'",
        "anthropic, openai",
    )


# 7. A bot class (or a factory's product) is decided at the door.


class CallableBot:
    def __call__(self, text: str) -> simulator.Reply:
        return good(text)


class AsyncCallableBot:
    async def __call__(self, text: str) -> simulator.Reply:
        return good(text)


class NotABot:
    pass


class AlsoNotABot:
    def reply(self, text: str) -> str:
        return "hi"


@pytest.mark.parametrize(
    "bot",
    [CallableBot, AsyncCallableBot, lambda: CallableBot(), lambda: good],
    ids=["class", "async class", "factory of an instance", "factory of a function"],
)
def test_a_factory_whose_product_is_callable_is_a_function_bot(bot: Any) -> None:
    result = simulator.run(_suite(), bot=bot, scenarios=SCENARIOS, progress=False)
    assert result.errors == 0 and result.scenario_status("chest") == ["pass"]


@pytest.mark.parametrize("bot", [NotABot, AlsoNotABot])
def test_a_class_that_is_no_bot_is_refused_before_the_run(bot: type) -> None:
    _refused(lambda: simulator.run(_suite(), bot=bot, scenarios=SCENARIOS), bot.__qualname__, "send(text)")
    _refused(lambda: simulator.compare(_suite(), bots=[bot], scenarios=SCENARIOS), "send(text)")
    assert not Path("runs").exists()


@pytest.mark.parametrize("kind", ["async sleeper", "sync sleeper"])
def test_a_bot_given_in_code_keeps_the_suite_s_turn_deadline(tmp_path: Path, kind: str) -> None:
    """The suite's bot.timeout_s (and its caps) were dropped for a bot given in code, which always ran on
    the 30 s default: a 1 s deadline in the suite let a slow bot take 30 s a turn."""
    import asyncio
    import time as clock

    async def async_sleeper(text: str) -> str:
        await asyncio.sleep(60)
        return "late"

    def sync_sleeper(text: str) -> str:
        clock.sleep(60)
        return "late"

    suite = simulator.Suite(
        bot={"type": "python", "factory": "x.y:z", "timeout_s": 1, "max_reply_bytes": 2000},
        user={"model": "offline"},
        runs=1,
    )
    bot = async_sleeper if kind == "async sleeper" else sync_sleeper
    result = simulator.run(
        suite, bot=bot, scenarios=[{"id": "s1", "persona": "p", "goal": "g"}], out=tmp_path / "run"
    )
    [conversation] = result.conversations
    assert conversation.error is not None and "within 1 s (bot.timeout_s" in conversation.error, (
        conversation.error
    )
