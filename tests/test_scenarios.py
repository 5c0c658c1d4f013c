"""Scenario files: valid ones load; each kind of mistake gives one clear problem with file, line and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.loading import load_scenarios
from simulator.errors import UserError


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def problems_of(paths: list[Path]) -> list[str]:
    with pytest.raises(UserError) as caught:
        load_scenarios(paths)
    return [str(p) for p in caught.value.problems]


def test_loads_single_list_and_nested_folders(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "id: a\npersona: p\ngoal: g\nfacts: Pain in the chest. It started at noon.\n")
    write(
        tmp_path,
        "sub/b.yaml",
        "- {id: b1, persona: p, goal: g}\n- {id: b2, persona: p, goal: g, max_turns: 3}\n",
    )
    write(tmp_path, "suite.yaml", "bot: {type: python, factory: 'x:y'}\n")  # skipped: a suite, not scenarios
    scenarios = {s.id: s for s in load_scenarios([tmp_path])}
    assert set(scenarios) == {"a", "b1", "b2"}
    assert scenarios["a"].facts == ["Pain in the chest.", "It started at noon."]
    assert scenarios["a"].max_turns == 12
    assert scenarios["b2"].max_turns == 3
    assert scenarios["b1"].source.endswith("b.yaml:1")


def test_unknown_key_names_line_and_suggests(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "id: a\npersona: p\ngoal: g\nfatcs: [x]\n")
    [problem] = problems_of([path])
    assert problem.startswith(f"{path}:4 [fatcs]")
    assert "did you mean 'facts'" in problem


def test_missing_field(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "id: a\npersona: p\n")
    [problem] = problems_of([path])
    assert "missing required field 'goal'" in problem and str(path) in problem


def test_wrong_type_names_field_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "id: a\npersona: p\ngoal: g\nmax_turns: lots\n")
    [problem] = problems_of([path])
    assert f"{path}:4 [max_turns]" in problem and "should be a whole number" in problem


def test_empty_persona_and_goal(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "id: a\npersona: '  '\ngoal: ''\n")
    found = problems_of([path])
    assert len(found) == 2
    assert any("[persona]" in p and "should not be empty" in p for p in found)
    assert any(":3 [goal]: should not be empty" in p for p in found)


def test_duplicate_id_across_files(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "id: same\npersona: p\ngoal: g\n")
    second = write(tmp_path, "b.yaml", "id: same\npersona: p\ngoal: g\n")
    [problem] = problems_of([tmp_path])
    assert str(second) in problem and "duplicate scenario id 'same'" in problem and "a.yaml:1" in problem


def test_unreadable_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "id: a\npersona: [unclosed\ngoal: g\n")
    [problem] = problems_of([path])
    assert "not valid YAML" in problem and str(path) in problem


def test_every_problem_in_every_file_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "id: a\npersona: p\n")
    write(tmp_path, "b.yaml", "id: b\npersona: p\ngoal: g\ntags: cardiac\n")
    assert len(problems_of([tmp_path])) == 2


def test_validate_command_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "a.yaml", "id: a\npersona: p\ngoal: g\nexpectd: {}\n")
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'expected'" in err and "Traceback" not in err


def test_validate_command_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.yaml", "id: a\npersona: p\ngoal: g\n")
    assert main(["validate", str(tmp_path)]) == 0
    assert "1 scenario: ok" in capsys.readouterr().out


def test_tag_filter(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        "- {id: a, persona: p, goal: g, tags: [cardiac]}\n- {id: b, persona: p, goal: g}\n",
    )
    assert [s.id for s in load_scenarios([tmp_path], tags=["cardiac"])] == ["a"]
    with pytest.raises(UserError, match="no scenario has any of the tags"):
        load_scenarios([tmp_path], tags=["neuro"])


def test_schema_command_prints_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["schema", "scenario"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["additionalProperties"] is False
    assert {"id", "persona", "goal"} <= set(schema["required"])


def test_validate_recognises_suites_criteria_and_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parent.parent
    assert main(["validate", str(root / "scenarios" / "triage" / "suite.yaml"), str(root / "judges")]) == 0
    out = capsys.readouterr().out
    assert "22 scenarios: ok" in out and "12 criteria: ok" in out  # triage 10 + smoke 2


def test_validate_reports_a_bad_criterion_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "c.yaml", "id: c\ncriterion: asks age\npass: asked\nfail: did not\nseverity: huge\n")
    assert main(["validate", str(tmp_path)]) == 2
    assert "c.yaml:5 [severity]" in capsys.readouterr().err
