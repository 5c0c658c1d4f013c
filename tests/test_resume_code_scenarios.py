"""A matrix (or a run) whose scenarios were given in code is resumed from Python with the same scenarios,
`simulator.resume(folder, scenarios=[...])`, as a bot given in code is: only what it lacks runs. Other
scenarios (fewer, more, or one whose content changed) are refused in one line, before anything runs; so is
a resume that leaves them out, which finished nothing and called the matrix complete."""

from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from simulator.errors import UserError
from tests.test_api import CHEST, RASH, _suite, emergency_bot, gp_bot

BOTS = {"e": emergency_bot, "g": gp_bot}


def _interrupt(folder: Path) -> str:
    """Keep the first conversation of `folder` (a run folder), as if the run stopped after it; what it kept."""
    file = folder / "conversations.jsonl"
    kept = file.read_text().splitlines()[0] + "\n"
    file.write_text(kept)
    return kept


def _matrix(tmp_path: Path) -> tuple[Path, simulator.Comparison]:
    out = tmp_path / "m"
    board = simulator.compare(_suite(), bots=BOTS, scenarios=[CHEST, RASH], out=out)
    for cell in ("e", "g"):
        _interrupt(out / cell)
    return out, board


def test_an_interrupted_matrix_resumes_with_the_same_scenarios_given_in_code(tmp_path: Path) -> None:
    out, first = _matrix(tmp_path)
    done = simulator.resume(out, bot=BOTS, scenarios=[RASH, CHEST])  # their order does not matter
    assert isinstance(done, simulator.Comparison)
    for cell in ("e", "g"):
        session = done[cell].session
        assert session is not None and (session.skipped, session.finished) == (1, 3)
        for scenario in ("chest-1", "rash-1"):
            assert done[cell].scenario_status(scenario) == first[cell].scenario_status(scenario)
        assert len((out / cell / "conversations.jsonl").read_text().splitlines()) == 4


def test_scenarios_built_as_models_are_the_same_scenarios(tmp_path: Path) -> None:
    out, _ = _matrix(tmp_path)
    done = simulator.resume(
        out, bot=BOTS, scenarios=[simulator.Scenario(**CHEST), simulator.Scenario(**RASH)]
    )
    assert isinstance(done, simulator.Comparison) and done["g"].session is not None
    assert done["g"].session.finished == 3


@pytest.mark.parametrize(
    ("scenarios", "said"),
    [
        (None, "this run's scenarios were given in code; pass the same ones again: simulator.resume("),
        ([CHEST], "scenario 'rash-1' of this run is not among scenarios="),
        (
            [CHEST, RASH, {**RASH, "id": "rash-2"}],
            "scenarios= holds 'rash-2', which this run did not run",
        ),
        (
            [{**CHEST, "facts": ["Pressure in the chest since yesterday."]}, RASH],
            "scenario 'chest-1' is not the one this run was made with (it changed since)",
        ),
        ([{**CHEST, "expected": {"triage_level": "gp"}}, RASH], "scenario 'chest-1' is not the one"),
    ],
)
def test_other_scenarios_are_refused_before_anything_runs(
    tmp_path: Path, scenarios: list[dict[str, object]] | None, said: str
) -> None:
    out, _ = _matrix(tmp_path)
    before = {cell: (out / cell / "conversations.jsonl").read_text() for cell in ("e", "g")}
    with pytest.raises(UserError) as caught:
        if scenarios is None:
            simulator.resume(out, bot=BOTS)
        else:
            simulator.resume(out, bot=BOTS, scenarios=scenarios)
    line = str(caught.value)
    assert said in line and "\n" not in line, line
    assert str(out / "e") in line or str(out) in line
    assert {cell: (out / cell / "conversations.jsonl").read_text() for cell in ("e", "g")} == before


def test_a_run_resumes_with_its_scenarios_given_in_code_too(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    first = simulator.run(_suite(), bot=emergency_bot, scenarios=[CHEST, RASH], out=folder)
    _interrupt(folder)
    with pytest.raises(UserError, match="scenario 'chest-1' is not the one"):
        simulator.resume(folder, bot=emergency_bot, scenarios=[{**CHEST, "goal": "Another goal."}, RASH])
    done = simulator.resume(folder, bot=emergency_bot, scenarios=[CHEST, RASH])
    assert isinstance(done, simulator.Result) and done.session is not None
    assert (done.session.skipped, done.session.finished) == (1, 3)
    assert done.scenario_status("rash-1") == first.scenario_status("rash-1")


def test_scenarios_for_a_run_read_from_files_are_refused(tmp_path: Path, suite_dir: Path) -> None:
    folder = tmp_path / "run"
    simulator.run(suite_dir / "suite.yaml", out=folder)
    _interrupt(folder)
    with pytest.raises(
        UserError, match="its scenarios are read from the files it recorded; leave out scenarios="
    ):
        simulator.resume(folder, scenarios=[CHEST])
