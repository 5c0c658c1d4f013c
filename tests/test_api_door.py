"""Issue 43, class 2: one error shape at the Python API's door. Every public call checks what it was passed
(api/door.py) and models built in code check their fields (models.BuiltModel): a mistake is one
`simulator.UserError` line naming the argument or field, never a TypeError or pydantic's ValidationError."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

import simulator


def _bot(text: str) -> str:
    return "ok"


MISUSE: dict[str, tuple[Any, str]] = {
    "resume(5)": (lambda: simulator.resume(5), "folder"),
    "resume()": (lambda: simulator.resume(), "folder"),
    "resume(None)": (lambda: simulator.resume(None), "folder"),
    "resume(retry_errors='yes')": (lambda: simulator.resume("x", retry_errors="yes"), "retry_errors"),
    "run(runz=3)": (lambda: simulator.run(runz=3), "did you mean 'runs'"),
    "run(options='x')": (lambda: simulator.run(None, options="x"), "options"),
    "run(runs='3')": (lambda: simulator.run(None, runs="3"), "runs"),
    "run(runs=True)": (lambda: simulator.run(None, runs=True), "runs"),
    "run(seed=1.5)": (lambda: simulator.run(None, seed=1.5), "seed"),
    "run(tags='cardiac')": (lambda: simulator.run(None, tags="cardiac"), "tags"),
    "run(out=3)": (lambda: simulator.run(None, out=3), "out"),
    "run(progress='no')": (lambda: simulator.run(None, progress="no"), "progress"),
    "run(scenarios=a scenario)": (lambda: simulator.run(None, scenarios={"id": "x"}), "scenarios"),
    "run('a', 'b')": (lambda: simulator.run("a", "b"), "positional"),
    "compare(bots=f)": (lambda: simulator.compare("s.yaml", bots=_bot), "bots"),
    "compare(models='m')": (lambda: simulator.compare("s.yaml", models="openai:x"), "models"),
    "compare(baseline=1)": (lambda: simulator.compare("s.yaml", models=["a:b"], baseline=1), "baseline"),
    "compare(modles=[...])": (lambda: simulator.compare("s.yaml", modles=["a:b"]), "did you mean 'models'"),
    "Suite(runz=3)": (lambda: simulator.Suite(runz=3), "runz"),
    "Suite(runs='x')": (lambda: simulator.Suite(bot={"type": "python", "factory": "a:b"}, runs="x"), "runs"),
    "Suite(bot='nope')": (lambda: simulator.Suite(bot="nope"), "bot"),
    "Scenario(no id)": (lambda: simulator.Scenario(persona="p", goal="g"), "id"),
    "Scenario(id='a b')": (lambda: simulator.Scenario(id="a b", persona="p", goal="g"), "id"),
    "Scenario(max_turns=-1)": (
        lambda: simulator.Scenario(id="a", persona="p", goal="g", max_turns=-1),
        "max_turns",
    ),
    "Scenario(persona=3)": (lambda: simulator.Scenario(id="a", persona=3, goal="g"), "persona"),
    "Reply(None)": (lambda: simulator.Reply(None), "messages"),
    "Reply('hi')": (lambda: simulator.Reply("hi"), "messages"),
    "Reply([1])": (lambda: simulator.Reply([1]), "messages"),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_api_misuse_is_one_user_error_line_naming_the_field(case: str) -> None:
    call, named = MISUSE[case]
    with pytest.raises(simulator.UserError) as caught:
        call()
    assert not isinstance(caught.value, ValidationError | TypeError)
    message = caught.value.render()
    assert "\n" not in message and named in message, message
    assert message.startswith("simulator."), message
    assert "ValidationError" not in message and "pydantic" not in message


def test_correct_models_still_build() -> None:
    scenario = simulator.Scenario(id="a", persona="p", goal="g")
    assert scenario.max_turns >= 1
    assert simulator.Reply(["hi"], closed=True).closed
    suite = simulator.Suite(bot={"type": "python", "factory": "examples.triage_bot:make_bot"})
    assert suite.bot.describe().startswith("python:")


def test_files_still_get_file_and_line_problems(tmp_path: Any) -> None:
    """The door is for code: a scenario file is still validated with its file:line problems."""
    from simulator.config.loading import load_scenarios

    path = tmp_path / "s.yaml"
    path.write_text("id: a\npersona: p\ngoal: g\nmax_turns: -1\n")
    with pytest.raises(simulator.UserError) as caught:
        load_scenarios([path])
    assert f"{path}:4" in caught.value.render()


async def test_a_python_bot_returning_reply_none_is_a_recorded_bot_error() -> None:
    from simulator.bots.base import BotError
    from simulator.bots.python_bot import PythonSession

    class Bot:
        def send(self, text: str) -> Any:
            return simulator.Reply(None)

    with pytest.raises(BotError) as caught:
        await PythonSession(Bot()).send("hello", 1)
    assert "Reply" in str(caught.value) and "messages" in str(caught.value)
