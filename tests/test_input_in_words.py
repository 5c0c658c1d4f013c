"""Bad input gets one line naming the file, line or field and the fix, never a parser's own text (repro7):
sign-off options without --sign, empty lists and repeated ids in user files, a damaged record line, a
negative threshold, a matrix folder where one run is read, and a run compared with itself."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, ValidationError

from simulator.analysis.compare import compare_runs
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.config.suite import load_suite
from simulator.errors import UserError, json_in_words, pattern_or_message
from simulator.record.index import INDEX, IndexCell, MatrixIndex, write_index
from simulator.report.gate import parse_requirement
from simulator.safety.hazards import load_hazard_log
from tests.synthetic import synthetic_outcome_run
from tests.test_report_support import write_suite
from tests.test_safety_file import LOG, _log

PLAN: dict[str, list[bool | str | None]] = {f"s{i}": [True, i != 0] for i in range(4)}
PARSER_WORDS = ("Invalid JSON", "column", "List should have", "after validation", "Expecting", "EOF")


# ---- (a) sign-off options without --sign ------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        ["--decision", "approve", "--name", "Dr X", "--justification", "ok"],
        ["--name", "Dr X"],
        ["--role", "CSO"],
        ["--comment", "fine"],
        ["--verify", "--decision", "reject"],
    ],
)
def test_sign_off_options_without_sign_are_refused_naming_sign(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    run, log, desk = synthetic_outcome_run(tmp_path / "runs" / "r", PLAN), _log(tmp_path), tmp_path / "desk"
    assert main(["safety-case", str(run), "--hazards", str(log), "--desk", str(desk), *extra]) == 2
    said = capsys.readouterr().err
    assert "without --sign: nothing would be signed; add --sign" in said and not desk.exists()


def test_a_document_without_verify_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, log = synthetic_outcome_run(tmp_path / "runs" / "r", PLAN), _log(tmp_path)
    assert main(["safety-case", str(run), "--hazards", str(log), "--document", str(tmp_path / "d.json")]) == 2
    assert "--document without --verify: add --verify" in capsys.readouterr().err


# ---- (b) empty lists and repeated ids ------------------------------------------------------------------


def _hazards_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(UserError) as caught:
        load_hazard_log(_log(tmp_path, text))
    return str(caught.value) + "".join(str(p) for p in caught.value.problems)


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            "    controls:\n      - id: C-1\n        description: Emergencies escalated.\n"
            "        criteria: [outcome.triage_level]\n        threshold: under_triage <= 5%\n",
            "    controls: []\n",
            "h.yaml:23 [hazards[1].controls]: should not be empty: give at least one item",
        ),
        (
            "        description: Emergencies escalated.\n",
            "        description: ''\n",
            "[hazards[1].controls[1].description]: should not be empty",
        ),
        (
            "  - id: HAZ-2\n",
            "  - id: HAZ-1\n",
            "h.yaml:28 [hazards[2].id]: hazard id HAZ-1 is used twice (first at line",
        ),
        (
            "      - id: C-2\n",
            "      - id: C-1\n",
            "[hazards[2].controls[1].id]: control id C-1 is used twice (first at",
        ),
    ],
    ids=["empty controls", "empty text", "repeated hazard id", "repeated control id"],
)
def test_a_hazard_log_mistake_is_said_in_words_at_its_line(
    tmp_path: Path, old: str, new: str, said: str | None
) -> None:
    assert old in LOG
    found = _hazards_error(tmp_path, LOG.replace(old, new))
    assert not any(words in found for words in PARSER_WORDS), found
    assert ":1:" not in found and ":1 [" not in found, found
    if said is not None:
        assert said in found, found


class _Shaped(BaseModel):
    levels: list[str] = Field(min_length=2)
    facts: list[str] = Field(min_length=1)
    name: str = Field(min_length=1)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"levels": ["a"], "facts": ["x"], "name": "n"}, "should have at least 2 items"),
        ({"levels": ["a", "b"], "facts": [], "name": "n"}, "should not be empty: give at least one item"),
        ({"levels": ["a", "b"], "facts": ["x"], "name": ""}, "should not be empty"),
    ],
)
def test_every_too_short_list_or_text_is_said_in_words(data: dict[str, object], said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _Shaped.model_validate(data)
    assert pattern_or_message(caught.value.errors()[0]) == said


def test_a_suite_outcome_with_one_level_is_said_in_words(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    text = suite.read_text(encoding="utf-8")
    old = "levels: [self_care, gp, urgent, emergency], critical: emergency"
    assert old in text
    text = text.replace(old, "levels: [emergency]")
    with pytest.raises(UserError) as caught:
        load_suite(suite, text=text)
    found = "".join(str(p) for p in caught.value.problems) + str(caught.value)
    assert "[outcome.levels]: should have at least 2 items" in found and "List should" not in found, found


# ---- (c) a damaged record line ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("control character (\\u0000-\\u001F) found while parsing a string at line 2 column 0", "cut short?"),
        ("EOF while parsing an object at line 1 column 7", "cut short?"),
        (
            "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 9",
            "control character",
        ),
        ("trailing characters at line 1 column 12", "more than one JSON value"),
        ("Expecting ',' delimiter", "is missing"),
        ("Expecting value", "not JSON at all?"),
        ("something new", "its syntax is broken"),
    ],
)
def test_a_json_parser_message_is_said_in_words(message: str, words: str) -> None:
    said = json_in_words(message)
    assert words in said and "column" not in said and "line 2" not in said


@pytest.mark.parametrize("cut", [40, 1, 200])
def test_a_torn_record_line_is_one_line_in_words(tmp_path: Path, cut: int) -> None:
    run = synthetic_outcome_run(tmp_path / "r", PLAN)
    lines = (run / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:cut]
    (run / "verdicts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_run(run)
    said = str(caught.value)
    assert "verdicts.jsonl:3:" in said and "JSON" in said and "cut short?" in said, said
    assert not any(words in said for words in PARSER_WORDS), said


# ---- (d) a threshold out of range ---------------------------------------------------------------------


@pytest.mark.parametrize("text", ["under_triage <= -5%", "under_triage >= -0.1", "pass_rate >= 150%"])
def test_a_threshold_out_of_range_gets_the_range_message(text: str) -> None:
    with pytest.raises(UserError, match="the threshold must be a rate between 0 and 1, or 0% and 100%"):
        parse_requirement(text, ["under_triage", "pass_rate"])


# ---- (e) a matrix folder where one run is read; (f) a run compared with itself ----------------------------


def _matrix(tmp_path: Path) -> Path:
    folder = tmp_path / "mx"
    for cell in ("original", "fixed"):
        synthetic_outcome_run(folder / cell, PLAN)
    cells = [
        IndexCell(id=c, bot_variant=c, folder=c, bot="python:m:f", user_model="offline")
        for c in ("original", "fixed")
    ]
    write_index(
        folder, MatrixIndex(matrix_id="mx", created_at=datetime.now(UTC), baseline="original", cells=cells)
    )
    assert (folder / INDEX).is_file()
    return folder


def test_a_matrix_given_to_compare_says_to_compare_its_cells(tmp_path: Path) -> None:
    matrix, run = _matrix(tmp_path), synthetic_outcome_run(tmp_path / "r", PLAN)
    for a, b in ((run, matrix), (matrix, run)):
        with pytest.raises(UserError) as caught:
            compare_runs(a, b)
        said = str(caught.value)
        assert f"{matrix} is a matrix run (2 cells: " in said and "not a run folder" not in said
        assert f"compare its cells, e.g. simulator compare {matrix / 'original'} {matrix / 'fixed'}" in said


def test_a_matrix_where_one_run_is_read_names_a_cell(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path)
    with pytest.raises(UserError, match=r"is a matrix run .* not one run: pass one cell's folder, e\.g\. "):
        load_run(matrix)


def test_a_run_compared_with_itself_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = synthetic_outcome_run(tmp_path / "r", PLAN)
    other = synthetic_outcome_run(tmp_path / "other", PLAN)
    assert compare_runs(run, other).same_folder is None
    same = compare_runs(run, tmp_path / "." / "r")
    assert same.same_folder is not None and "every difference is 0 by construction" in same.same_folder
    capsys.readouterr()
    assert main(["compare", str(run), str(run), "--json", str(tmp_path / "c.json")]) == 0
    assert "A and B are the same folder and judge set" in capsys.readouterr().out
    assert "same folder" in json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["same_folder"]
