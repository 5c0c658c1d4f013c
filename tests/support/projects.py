"""A one-scenario project on disk (a suite file, a scenario, optionally a criterion), for the tests that try
what a suite, scenario or criterion file may say and how `validate` and `run` answer."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import simulator
from simulator.models import StrictModel

SCENARIO = "id: s1\npersona: p\ngoal: g\nexpected: {triage_level: gp}\n"
BOT = "bot: {type: python, factory: 'json:JSONEncoder'}\n"
SCENARIOS = "scenarios: {paths: [scenarios]}\n"
CRITERION = "id: c1\ncriterion: The bot is polite.\npass: polite\nfail: rude\n"


def one_scenario_project(
    tmp_path: Path, suite: str, scenario: str = SCENARIO, criterion: str | None = None
) -> Path:
    """`tmp_path/suite.yaml` saying `suite`, with `scenarios/s1.yaml` saying `scenario` and, when given,
    `judges/c1.yaml` saying `criterion` (the suite then reads `judges: {paths: [judges]}` too)."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s1.yaml").write_text(scenario)
    if criterion is not None:
        (tmp_path / "judges").mkdir()
        (tmp_path / "judges" / "c1.yaml").write_text(criterion)
        suite += "judges: {paths: [judges]}\n"
    path = tmp_path / "suite.yaml"
    path.write_text(suite)
    return path


def cough_project(tmp_path: Path, name: str, factory: str, more: str = "") -> Path:
    """`tmp_path/suite.yaml`: one scenario (a cough, two turns) played by the offline user against the python
    bot `factory` (`more`: further suite lines), for the tests that run a whole small run in a probe process."""
    (tmp_path / "scenarios.yaml").write_text(
        "- id: one\n  persona: A person.\n  goal: Ask about a cough.\n  facts: [It started a week ago.]\n"
        "  max_turns: 2\n",
        encoding="utf-8",
    )
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        f"name: {name}\nscenarios: {{paths: [scenarios.yaml]}}\n"
        f"bot: {{type: python, factory: '{factory}'}}\nuser: {{model: offline}}\n{more}",
        encoding="utf-8",
    )
    return suite


def every_strict_model() -> list[type[StrictModel]]:
    """Every StrictModel the package defines (each module imported first), for the structural tests that
    check a rule holds for every field a person may write."""
    for module in pkgutil.walk_packages(simulator.__path__, "simulator."):
        if module.name.endswith("__main__"):
            continue  # it runs the command line
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:  # an extra not installed here (the local model); CI has them all
            assert exc.name and not exc.name.startswith("simulator"), exc
    found, todo = [], list(StrictModel.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__.startswith("simulator.")]
