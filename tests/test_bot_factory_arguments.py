"""A python bot class (or factory) that needs arguments is refused once, before the run, naming the field.

Before, `bot.factory: bots:TriageBot` where `TriageBot.__init__(self, model)` passed `validate`, and `run`
started: every conversation then ended in the same bot error (`factory ... raised TypeError: ... missing 1
required positional argument`), and the Python API's `bot=TriageBot` the same. Now one rule
(config/bots `factory_needs`: the parameters without a default, other than `env`, which the engine gives by
name) is checked where the factory is loaded (`validate`, `run`, `simulator.run` of a suite file: the
preflight) and where a class is given in code (`bot=`), with one line naming the field, the class and the fix.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import simulator
from simulator.cli import main
from simulator.errors import UserError

BOTS = """
from dataclasses import dataclass

class Positional:
    def __init__(self, model, temperature=0.2):
        self.model = model

    def send(self, text):
        return "hello"

class KeywordOnly:
    def __init__(self, *, model):
        self.model = model

    def send(self, text):
        return "hello"

@dataclass
class Fields:
    model: str
    temperature: float = 0.2

    def send(self, text):
        return "hello"

class Two:
    def __init__(self, model, prompt):
        pass

    def send(self, text):
        return "hello"

def make(model):
    return Positional(model)

class Defaults:
    def __init__(self, model="m", env=None):
        pass

    def send(self, text):
        return "hello"

class TakesEnv:
    def __init__(self, env):
        pass

    def send(self, text):
        return "hello"
"""

# Each factory that cannot be called without arguments, and what its line says it needs.
NEEDY = {
    "Positional": "is a class whose constructor needs the argument model,",
    "KeywordOnly": "is a class whose constructor needs the argument model,",
    "Fields": "is a class whose constructor needs the argument model,",
    "Two": "is a class whose constructor needs the arguments model, prompt,",
    "make": "needs the argument model,",
}

SUITE = """\
name: needy
bot:
  type: python
  factory: needy_bots_mod:{factory}
user: {{model: offline}}
scenarios: {{paths: [scenarios]}}
runs: 2
environment:
  state: {{}}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "needy_bots_mod.py").write_text(BOTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("needy_bots_mod", None)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s.yaml").write_text("id: s\npersona: p\ngoal: g\nmax_turns: 2\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _suite(folder: Path, factory: str) -> Path:
    path = folder / f"{factory}.yaml"
    path.write_text(SUITE.format(factory=factory))
    return path


@pytest.mark.parametrize("factory", sorted(NEEDY))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_command_line_refuses_it_once_naming_the_field(
    folder: Path, capsys: pytest.CaptureFixture[str], factory: str, command: str
) -> None:
    suite = _suite(folder, factory)
    extra = ["--out", str(folder / "run"), "--no-progress"] if command == "run" else []
    assert main([command, str(suite), *extra]) == 2
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "needy_bots_mod" in line]
    assert line.strip().startswith(f"{suite}:4 [bot.factory]: bot factory 'needy_bots_mod:{factory}'"), line
    assert NEEDY[factory] in line and "give every parameter a default" in line, line
    assert "Traceback" not in err and "TypeError" not in err, err
    assert not (folder / "run").exists()


@pytest.mark.parametrize("factory", sorted(NEEDY))
def test_the_python_api_refuses_a_suite_file_before_the_run(folder: Path, factory: str) -> None:
    with pytest.raises(UserError) as caught:
        simulator.run(_suite(folder, factory), out=folder / "run")
    assert "[bot.factory]" in str(caught.value) and NEEDY[factory] in str(caught.value), str(caught.value)
    assert not (folder / "run").exists()


@pytest.mark.parametrize("name", sorted(set(NEEDY) - {"make"}))
def test_the_python_api_refuses_such_a_class_given_in_code(folder: Path, name: str) -> None:
    import needy_bots_mod

    suite = simulator.Suite(bot={"type": "python", "factory": "unused:make"}, user={"model": "offline"})
    scenario = {"id": "s", "persona": "p", "goal": "g", "max_turns": 2}
    with pytest.raises(UserError) as caught:
        simulator.run(suite, bot=getattr(needy_bots_mod, name), scenarios=[scenario], out=folder / "run")
    said = str(caught.value)
    assert said.startswith(f"bot needy_bots_mod.{name} {NEEDY[name]}"), said
    assert f"bot={name}(...)" in said and f"bot=lambda: {name}(...)" in said, said
    assert not (folder / "run").exists()


@pytest.mark.parametrize("factory", ["Defaults", "TakesEnv"])
def test_a_class_made_without_arguments_still_runs(
    folder: Path, capsys: pytest.CaptureFixture[str], factory: str
) -> None:
    """Defaults for all, or only `env` (given by name when the suite has an environment)."""
    suite = _suite(folder, factory)
    assert main(["validate", str(suite)]) == 0
    result = simulator.run(suite, out=folder / "run")
    assert result.errors == 0 and len(result.conversations) == 2, result.summary()
