"""A run folder edited by hand is read only for what its records may hold (the record models' types and bounds):
an expected value the reports cannot count, a repeat or a count out of range, a manifest without its scenarios
or judge set is one line naming the file, the field and the fix, for `report`, `gate` and `safety-case`, never
a traceback and never a figure printed as if true."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.record.folder import CONVERSATIONS, MANIFEST, VERDICTS
from tests.test_report_support import make_judged_run

FIX = "the file was edited or damaged; correct it, or restore it from a copy"
PYTHON_ERRORS = re.compile(r"Traceback|\b(Key|Type|Attribute|Value|Index|Recursion)Error\b")
HAZARDS = Path(__file__).resolve().parents[1] / "examples" / "triage_hazards.yaml"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_judged_run(tmp_path_factory.mktemp("readers"), runs=2)


def _copy(run: Path, tmp_path: Path, manifest: Callable[[dict[str, Any]], None] | None = None) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(run, folder)
    if manifest is not None:
        data = json.loads((folder / MANIFEST).read_text())
        manifest(data)
        (folder / MANIFEST).write_text(json.dumps(data))
    return folder


def _edit_lines(folder: Path, name: str, edit: Callable[[int, dict[str, Any]], None]) -> None:
    lines = [json.loads(line) for line in (folder / name).read_text().splitlines()]
    for number, line in enumerate(lines):
        edit(number, line)
    (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))


def _command(name: str, folder: Path) -> list[str]:
    extra = {"gate": ["--require", "under_triage <= 5%"], "safety-case": ["--hazards", str(HAZARDS)]}
    return [name, str(folder), *extra.get(name, [])]


def _refused(folder: Path, capsys: pytest.CaptureFixture[str], command: str, *named: str) -> str:
    capsys.readouterr()
    code = main(_command(command, folder))
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not PYTHON_ERRORS.search(err), err
    for name in named:
        assert name in err, err
    return err


def _scenario_expected(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda m: m["scenarios"][0].__setitem__("expected", {"triage_level": value})


# ---- 1: an expected value of a type the reports cannot count ---------------------------------------------


@pytest.mark.parametrize("command", ["report", "gate", "safety-case"])
@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["emergency"], "not a list"),
        ({"level": "emergency"}, "not a mapping"),
        ([], "not a list"),
        (
            "emergncy",
            "did you mean 'emergency'",
        ),  # a level the suite does not declare: dropped silently before
        (7, "is not one of outcome.levels"),
    ],
)
def test_an_expected_value_the_reports_cannot_count_is_one_line_naming_its_key(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, value: Any, says: str
) -> None:
    folder = _copy(run, tmp_path, _scenario_expected(value))
    _refused(
        folder, capsys, command, str(folder / MANIFEST), "[scenarios.0.expected.triage_level]", says, FIX
    )


def test_an_environment_expected_that_is_not_a_mapping_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(run, tmp_path, lambda m: m["scenarios"][1]["expected"].__setitem__("environment", [1]))
    _refused(folder, capsys, "report", "[scenarios.1.expected.environment]", "should map state paths")


@pytest.mark.parametrize("value", [["emergency"], {"a": 1}])
def test_an_outcome_verdicts_expected_read_in_place_of_the_manifests_is_one_value(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    """A manifest without `expected` (older runs) takes it from the outcome verdicts: they hold one value too."""
    folder = _copy(run, tmp_path, lambda m: [s.__setitem__("expected", {}) for s in m["scenarios"]])
    outcome = next(
        n
        for n, line in enumerate((folder / VERDICTS).read_text().splitlines())
        if '"outcome.triage_level"' in line
    )

    def edit(number: int, line: dict[str, Any]) -> None:
        if number == outcome:
            line["expected"] = value

    _edit_lines(folder, VERDICTS, edit)
    _refused(folder, capsys, "report", f"{folder / VERDICTS}:{outcome + 1}", "[expected]", "one value")


def test_a_scenario_file_expecting_a_list_is_refused_where_it_is_written(tmp_path: Path) -> None:
    """The scenario file and the manifest share the type: a run never writes a manifest its reports refuse."""
    from pydantic import ValidationError

    from simulator.config.scenario import Scenario

    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(
            {"id": "a", "persona": "p", "goal": "g", "expected": {"triage_level": ["emergency"]}}
        )
    assert caught.value.errors()[0]["loc"] == ("expected", "triage_level")


# ---- 3: repeats, counts and the plan out of range ---------------------------------------------------------


@pytest.mark.parametrize("repeat", [10**400, -1, 10_000])
@pytest.mark.parametrize("name", [CONVERSATIONS, VERDICTS])
def test_a_repeat_out_of_range_is_one_line(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], repeat: int, name: str
) -> None:
    folder = _copy(run, tmp_path)

    def edit(number: int, line: dict[str, Any]) -> None:
        if number == 2:
            line["repeat"] = repeat

    _edit_lines(folder, name, edit)
    _refused(folder, capsys, "report", f"{folder / name}:3", "[repeat]")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda m: m.__setitem__("planned", -7), "[planned]"),
        (lambda m: m.__setitem__("planned", 10**15), "[planned]"),
        (lambda m: m["counts"].__setitem__("conversations", -1), "[counts.conversations]"),
        (lambda m: m["counts"].__setitem__("errors", -3), "[counts.errors]"),
        (
            lambda m: m["counts"]["stop_reasons"].__setitem__("user_done", -2),
            "[counts.stop_reasons.user_done]",
        ),
        (lambda m: m.__setitem__("judge_sets", []), "[judge_sets]"),
        (lambda m: m.__setitem__("scenarios", []), "[scenarios]"),
    ],
)
def test_a_manifest_count_or_plan_out_of_range_is_one_line(
    run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    field: str,
) -> None:
    folder = _copy(run, tmp_path, edit)
    _refused(folder, capsys, "report", str(folder / MANIFEST), field, FIX)


def test_the_plan_bound_names_the_suites_runs_and_scenarios(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(run, tmp_path, lambda m: m.__setitem__("planned", 15))
    _refused(folder, capsys, "report", "[planned]", "at most 14", "2 runs of the 7 scenarios")
