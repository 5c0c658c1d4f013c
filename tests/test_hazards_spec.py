"""The hazard log as validated data: file:line:field errors, the matrix, names checked against the runs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import UserError
from simulator.safety.hazard_check import check_hazard_log
from simulator.safety.hazards import DCB0129, load_hazard_log

ROOT = Path(__file__).resolve().parent.parent
GOOD = """\
title: t
hazards:
  - id: H1
    title: Missed emergency
    cause: c
    effect: e
    severity: major
    likelihood: low
    controls:
      - id: C1
        description: d
        criteria: [outcome.triage_level]
        tags: [cardiac]
        threshold: under_triage <= 2%
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hazards.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(UserError) as caught:
        load_hazard_log(path)
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize(
    ("old", "new", "line", "needle"),
    [
        ("criteria: [outcome.triage_level]", "criteria: []", 10, "names no criterion"),
        ("severity: major", "severity: huge", 7, "severity 'huge' is not on the matrix"),
        ("likelihood: low", "likelihood: often", 8, "likelihood 'often' is not on the matrix"),
        ("    cause: c\n", "    cause: c\n    causes: x\n", 6, "unknown key 'causes'"),
        ("threshold: under_triage <= 2%\n", "\n", 10, "a test control without a threshold"),
    ],
)
def test_each_mistake_names_file_line_and_field(
    tmp_path: Path, old: str, new: str, line: int, needle: str
) -> None:
    assert old in GOOD
    (problem,) = _problems(_write(tmp_path, GOOD.replace(old, new)))
    assert problem.startswith(f"{tmp_path / 'hazards.yaml'}:{line} [hazards[1].") and needle in problem


def test_a_declared_matrix_must_be_complete(tmp_path: Path) -> None:
    matrix = """\
    matrix:
      severity: [low, high]
      likelihood: [rare, often]
      acceptability: [ok, not_ok]
      cells: {rare: [ok, ok]}
      rates: {rare: 0.01, often: 1.0}
    """
    text = GOOD.replace("title: t\n", "title: t\n" + textwrap.dedent(matrix))
    (problem,) = _problems(_write(tmp_path, text))
    assert ":2 [matrix" in problem and "one row per likelihood level (rare, often)" in problem


def test_unknown_criterion_tag_and_metric_are_each_named(tmp_path: Path) -> None:
    text = GOOD.replace("[outcome.triage_level]", "[outcome.triage_level, chest-pain-redflags]")
    text = text.replace("[cardiac]", "[cardiak]").replace("under_triage <= 2%", "undertriage <= 2%")
    log = load_hazard_log(_write(tmp_path, text))
    with pytest.raises(UserError) as caught:
        check_hazard_log(log, {"outcome.triage_level", "chest-pain-red-flags"}, {"cardiac"}, {"under_triage"})
    problems = [str(p) for p in caught.value.problems]
    assert len(problems) == 3
    assert (
        ":12 [hazards[1].controls[1].criteria[2]]" in problems[0]
        and "did you mean 'chest-pain-red-flags'" in problems[0]
    )
    assert ":13 [hazards[1].controls[1].tags[1]]" in problems[1] and "did you mean 'cardiac'" in problems[1]
    assert (
        ":14 [hazards[1].controls[1].threshold]" in problems[2]
        and "unknown metric 'undertriage'" in problems[2]
    )


def test_the_safety_case_refuses_a_log_naming_what_the_run_lacks(tmp_path: Path) -> None:
    from tests.synthetic import synthetic_outcome_run

    run = synthetic_outcome_run(tmp_path / "run", {"s1": [True]})
    path = _write(tmp_path, GOOD)  # tag `cardiac` is on no scenario of the run
    assert main(["safety-case", str(run), "--hazards", str(path)]) == 2


def test_the_example_log_is_valid_and_uses_the_dcb0129_matrix() -> None:
    log = load_hazard_log(ROOT / "examples/triage_hazards.yaml")
    assert log.risk_matrix == DCB0129 and 6 <= len(log.hazards) <= 10
    assert DCB0129.cell("catastrophic", "very_high") == "unacceptable"
    assert DCB0129.cell("minor", "very_low") == "acceptable"
    assert DCB0129.likelihood_for(0.004) == "low" and DCB0129.likelihood_for(0.5) == "very_high"


def test_the_schema_command_prints_the_hazard_log_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "hazards"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "hazards" in schema["properties"] and schema["$schema"].endswith("2020-12/schema")


def test_new_hazard_writes_a_file_that_loads_back(tmp_path: Path) -> None:
    out = tmp_path / "h.yaml"
    flags = [
        "--id",
        "HAZ-9",
        "--title",
        "Missed stroke",
        "--cause",
        "FAST signs not asked",
        "--effect",
        "Late thrombolysis",
        "--severity",
        "catastrophic",
        "--likelihood",
        "low",
        "--control",
        "Stroke sent to 999",
        "--criteria",
        "outcome.triage_level",
        "--tags",
        "neuro",
        "--threshold",
        "emergency_sensitivity >= 95%",
        "--out",
        str(out),
    ]
    assert main(["new", "hazard", *flags]) == 0
    log = load_hazard_log(out)
    control = log.hazards[0].controls[0]
    assert (control.id, control.criteria, control.tags) == ("HAZ-9-C1", ["outcome.triage_level"], ["neuro"])
    assert main(["new", "hazard", *flags]) == 2  # exists: refused without --force
    bad = [*flags[:-2], "--out", str(tmp_path / "bad.yaml")]
    bad[bad.index("catastrophic")] = "deadly"
    assert main(["new", "hazard", *bad]) == 2 and not (tmp_path / "bad.yaml").exists()


def test_an_unknown_matrix_preset_is_named(tmp_path: Path) -> None:
    (problem,) = _problems(_write(tmp_path, "matrix: dcb0160\n" + GOOD))
    assert ":1 [matrix]" in problem and "matrix 'dcb0160' is not a preset (dcb0129)" in problem


@pytest.mark.parametrize(
    ("weights", "needle"),
    [
        ({"emergancy": {"gp": 1}}, "'emergancy' is not one of levels"),
        ({"emergency": {"emergency": 1}}, "must be another level"),
        ({"emergency": {"gp": -1}}, "cannot be negative"),
    ],
)
def test_the_suite_harm_weights_are_validated(weights: dict[str, dict[str, float]], needle: str) -> None:
    from pydantic import ValidationError

    from simulator.config.suite import OutcomeConfig

    with pytest.raises(ValidationError, match=needle):
        OutcomeConfig(
            key="triage_level", levels=["self_care", "gp", "urgent", "emergency"], harm_weights=weights
        )
