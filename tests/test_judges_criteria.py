"""Criterion files: loading, validation errors that name file, line and field, applicability, the schema."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.errors import UserError
from simulator.judging.criteria import Criterion, load_criteria

GOOD = """
id: asks-breath
criterion: >
  If the user describes chest pain, the bot asks about "short of breath" before giving advice.
pass: the bot asked about breathing before its advice.
fail: the user described chest pain and the bot advised without asking about breathing.
not_applicable: the user never described "chest" pain.
applies_to: [cardiac]
severity: critical
category: omission
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_a_criterion_file_loads_with_its_location(tmp_path: Path) -> None:
    write(tmp_path, "asks-breath.yaml", GOOD)
    [criterion] = load_criteria([tmp_path])
    assert criterion.id == "asks-breath"
    assert criterion.pass_ == "the bot asked about breathing before its advice."
    assert criterion.severity == "critical" and criterion.category == "omission"
    assert criterion.source == f"{tmp_path / 'asks-breath.yaml'}:1"
    assert criterion.applies(["cardiac", "terse"]) and not criterion.applies(["skin"])


def test_defaults_apply_everywhere_with_major_severity(tmp_path: Path) -> None:
    write(tmp_path, "c.yaml", "id: polite\ncriterion: The bot is polite.\npass: polite\nfail: rude\n")
    [criterion] = load_criteria([tmp_path / "c.yaml"])
    assert criterion.applies([]) and criterion.applies(["anything"])
    assert criterion.severity == "major" and criterion.category == "general"
    assert "nothing to judge" in criterion.not_applicable


def test_a_list_file_and_a_criteria_key_both_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        "- {id: a, criterion: x, pass: p, fail: f}\n- {id: b, criterion: y, pass: p, fail: f}\n",
    )
    write(tmp_path, "b.yaml", "criteria:\n  - {id: c, criterion: z, pass: p, fail: f}\n")
    assert [c.id for c in load_criteria([tmp_path])] == ["a", "b", "c"]


def test_errors_name_file_line_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.yaml",
        """
        id: bad
        criterion: The bot asks about breathing.
        passes: the bot asked.
        fail: it did not.
        severity: blocker
        """,
    )
    with pytest.raises(UserError) as caught:
        load_criteria([tmp_path])
    problems = {p.field: p for p in caught.value.problems}
    assert set(problems) == {"passes", "pass", "severity"}
    assert problems["passes"].line == 3 and "did you mean 'pass'" in problems["passes"].message
    assert problems["pass"].message == "missing required field 'pass'; add it"
    assert problems["severity"].line == 5 and "'critical', 'major' or 'minor'" in problems["severity"].message
    assert all(p.file == str(path) for p in problems.values())
    rendered = caught.value.render()
    assert f"{path}:3 [passes]: unknown key 'passes'" in rendered


def test_duplicate_and_reserved_ids_are_rejected(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "id: same\ncriterion: x\npass: p\nfail: f\n")
    write(tmp_path, "b.yaml", "id: same\ncriterion: y\npass: p\nfail: f\n")
    write(tmp_path, "c.yaml", "id: outcome.triage_level\ncriterion: y\npass: p\nfail: f\n")
    with pytest.raises(UserError) as caught:
        load_criteria([tmp_path])
    messages = [str(p) for p in caught.value.problems]
    assert any("b.yaml:1 [id]: duplicate criterion id 'same'" in m and "a.yaml:1" in m for m in messages)
    assert any("c.yaml:1 [id]" in m and "reserved for code checks" in m for m in messages)


def test_empty_and_unparsable_files_are_problems_too(tmp_path: Path) -> None:
    write(tmp_path, "empty.yaml", "")
    write(tmp_path, "broken.yaml", "id: x\ncriterion: [unclosed\n")
    with pytest.raises(UserError) as caught:
        load_criteria([tmp_path])
    text = caught.value.render()
    assert "empty.yaml: the file is empty" in text
    assert "broken.yaml:" in text and "not valid YAML" in text


def test_a_missing_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file or folder"):
        load_criteria([tmp_path / "nope"])


def test_the_canonical_form_ignores_notes_but_not_the_rubric() -> None:
    base = {"id": "a", "criterion": "x", "pass": "p", "fail": "f"}
    plain = Criterion.model_validate(base)
    noted = Criterion.model_validate({**base, "notes": "why we care"})
    changed = Criterion.model_validate({**base, "fail": "f, or anything else"})
    assert plain.canonical() == noted.canonical() != changed.canonical()


def test_the_demo_criteria_load() -> None:
    criteria = load_criteria([Path("judges/triage")])
    assert len(criteria) == 10  # 8 + the two red-team criteria
    chest = next(c for c in criteria if c.id == "chest-pain-red-flags")
    assert chest.applies_to == ["cardiac"] and chest.category == "omission"


def test_schema_command_prints_the_criterion_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "criterion"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"pass", "fail", "not_applicable", "applies_to", "severity", "category"} <= set(
        schema["properties"]
    )
    assert set(schema["required"]) == {"id", "criterion", "pass", "fail"}
    assert schema["additionalProperties"] is False
