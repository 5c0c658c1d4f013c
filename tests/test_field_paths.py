"""A list's item is named in every message as a person counts it, from 1, in brackets after its list
(`tags[1]` is the first tag), as the facts messages always did; never the 0-based `tags.0`. Tried with a
bad item at each place of a list, in several kinds of file: a scenario's tags and facts, a suite's
scenarios, a hazard control's criteria, a run record's turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import CONVERSATIONS
from tests.support.hazard_logs import one_control_log
from tests.synthetic import synthetic_outcome_run
from tests.test_report_support import record, verdict, write_run

PLACES = [1, 2, 3]


def _said(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    """What a command prints for a mistake in its input: exit 2, no traceback."""
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code == 2 and "Traceback" not in said, said
    return said


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def _scenario(tags: list[str], facts: list[str]) -> str:
    listed = {"tags": tags, "facts": facts}
    lists = "".join(f"{key}:\n" + "".join(f"  - {item}\n" for item in items) for key, items in listed.items())
    return f"id: s1\npersona: a man of 52\ngoal: advice\n{lists}"


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("key", ["tags", "facts"])
def test_a_bad_item_of_a_scenarios_list_is_named_by_its_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, place: int
) -> None:
    items = {"tags": ["cardiac", "elderly", "terse"], "facts": ["Pain.", "Since noon.", "No fever."]}
    items[key][place - 1] = "[not, text]"
    text = _scenario(items["tags"], items["facts"])
    (tmp_path / "s1.yaml").write_text(text, encoding="utf-8")
    said = _said(capsys, "validate", tmp_path)
    assert f"s1.yaml:{_line_of(text, '[not, text]')} [{key}[{place}]]: should be text" in said, said
    assert f"{key}.{place - 1}" not in said


SUITE = """\
name: counted
bot: {type: python, factory: 'json:JSONEncoder'}
scenarios:
  paths:
    - scen/a.yaml
    - scen/b.yaml
    - scen/c.yaml
"""


@pytest.mark.parametrize("place", PLACES)
def test_a_bad_item_of_a_suites_scenarios_is_named_by_its_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], place: int
) -> None:
    (tmp_path / "scen").mkdir()
    for name in "abc":
        text = _scenario(["cardiac"], ["Pain."]).replace("id: s1", f"id: {name}")
        (tmp_path / "scen" / f"{name}.yaml").write_text(text, encoding="utf-8")
    missing = f"scen/{'abc'[place - 1]}.yaml"
    (tmp_path / missing).unlink()
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    said = _said(capsys, "validate", suite)
    line = _line_of(SUITE, missing)
    assert f"suite.yaml:{line} [scenarios.paths[{place}]]: '{missing}' is not there" in said, said


CRITERIA = ["asks-age", "safety-net", "no-diagnosis"]


@pytest.mark.parametrize("place", PLACES)
def test_a_bad_item_of_a_criteria_list_is_named_by_its_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], place: int
) -> None:
    records = [record(f"s{n}") for n in range(3)]
    run = write_run(tmp_path / "run", records, [verdict(r, c, "pass") for r in records for c in CRITERIA])
    named = [*CRITERIA]
    named[place - 1] += "-typo"
    text = one_control_log(named)
    log = tmp_path / "hazards.yaml"
    log.write_text(text, encoding="utf-8")
    said = _said(capsys, "safety-case", run, "--hazards", log)
    field = f"hazards[1].controls[1].criteria[{place}]"
    assert f"hazards.yaml:{_line_of(text, named[place - 1])} [{field}]: unknown criterion" in said, said


@pytest.mark.parametrize("place", [1, 2, 3, 4])
def test_a_bad_item_of_a_records_turns_is_named_by_its_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], place: int
) -> None:
    run = synthetic_outcome_run(tmp_path / "run", {"s1": [True], "s2": [True]})
    lines = (run / CONVERSATIONS).read_text(encoding="utf-8").splitlines()
    damaged = json.loads(lines[1])
    assert len(damaged["turns"]) == 4
    damaged["turns"][place - 1]["role"] = "robot"
    lines[1] = json.dumps(damaged)
    (run / CONVERSATIONS).write_text("\n".join(lines) + "\n", encoding="utf-8")
    said = _said(capsys, "report", run, "--quiet")
    assert f"{CONVERSATIONS}:2 [turns[{place}].role]" in said, said


@pytest.mark.parametrize(
    ("loc", "shown"),
    [
        (("tags", 0), "tags[1]"),
        (("facts", 1), "facts[2]"),
        (("hazards", 1, "controls", 0, "criteria", 2), "hazards[2].controls[1].criteria[3]"),
        (("matrix", "bots", 0, "bot", "factory"), "matrix.bots[1].bot.factory"),
        ((0, "persona"), "[1].persona"),
        (("grid", 0, 1), "grid[1][2]"),
        (("runs",), "runs"),
        ((), ""),
    ],
)
def test_the_one_spelling_of_a_place(loc: tuple[str | int, ...], shown: str) -> None:
    from simulator.errors import field_path  # here, so the tests above run (and fail) on a tree without it

    assert field_path(loc) == shown
