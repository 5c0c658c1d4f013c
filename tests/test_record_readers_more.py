"""A run folder edited by hand is read only for what its records may hold (the record models' types and bounds):
an expected value the reports cannot count, a repeat or a count out of range, a manifest without its scenarios
or judge set is one line naming the file, the field and the fix, for `report`, `gate` and `safety-case`, never
a traceback and never a figure printed as if true. Every string from a run folder reaches the terminal through
`visible`, whichever command prints it; and the header states an equation only when it holds."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.table import Table
from rich.text import Text

from simulator.cli import main
from simulator.record.folder import CONVERSATIONS, MANIFEST, VERDICTS
from simulator.report.model import RunInfo
from tests.test_report_support import make_judged_run

FIX = "the file was edited or damaged; correct it, or restore it from a copy"
PYTHON_ERRORS = re.compile(r"Traceback|\b(Key|Type|Attribute|Value|Index|Recursion)Error\b")
HAZARDS = Path(__file__).resolve().parents[1] / "examples" / "triage_hazards.yaml"
# What a terminal obeys: ESC (CSI, OSC 0 title, OSC 8 link), BEL, the one-byte CSI 0x9b, bidi overrides.
HOSTILE = (
    "x\x1b]0;PWNED\x07\x1b[31mRED\x1b[0m\x1b]8;;http://e.vil\x1b\\link\x1b]8;;\x1b\\\x9b2J\u202eRLO\u2066"
)
RAW = re.compile("[\x1b\x07\x9b\u202e\u2066]")
_STYLE = re.compile(r"\x1b\[[0-9;]*m")


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
        folder, capsys, command, str(folder / MANIFEST), "[scenarios[1].expected.triage_level]", says, FIX
    )


def test_an_environment_expected_that_is_not_a_mapping_is_refused(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(run, tmp_path, lambda m: m["scenarios"][1]["expected"].__setitem__("environment", [1]))
    _refused(folder, capsys, "report", "[scenarios[2].expected.environment]", "should map state paths")


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


# ---- 2: every string from a run folder reaches the terminal through `visible` -----------------------------


def _hostile_run(run: Path, tmp_path: Path) -> Path:
    """The run with its run id, suite name, a scenario id, a tag and a criterion id holding escape codes."""
    scenario, criterion = "chest-pain", "outcome.triage_level"
    hostile_id = "chest" + HOSTILE

    def manifest(m: dict[str, Any]) -> None:
        m["run_id"] = "<script>" + HOSTILE
        m["suite"]["name"] = "suite" + HOSTILE
        for entry in m["scenarios"]:
            if entry["id"] == scenario:
                entry["id"] = hostile_id
                entry["tags"] = [*entry["tags"], "tag" + HOSTILE]

    folder = _copy(run, tmp_path, manifest)

    def conversation(_: int, line: dict[str, Any]) -> None:
        if line["scenario_id"] == scenario:
            line["scenario_id"] = hostile_id
            line["id"] = line["id"].replace(scenario, hostile_id)
            line["tags"] = [*line["tags"], "tag" + HOSTILE]

    def verdict(_: int, line: dict[str, Any]) -> None:
        if line["scenario_id"] == scenario:
            line["scenario_id"] = hostile_id
            line["conversation_id"] = line["conversation_id"].replace(scenario, hostile_id)
        if line["criterion_id"] == "asks-age":
            line["criterion_id"] = "asks" + HOSTILE

    _edit_lines(folder, CONVERSATIONS, conversation)
    _edit_lines(folder, VERDICTS, verdict)
    assert criterion  # the outcome criterion keeps its id: the figures still count
    return folder


def test_no_string_from_a_run_folder_reaches_the_terminal_raw_in_the_report(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gate`, `safety-case`, `compare`, `show` and `calibrate` printed none raw before; the report's header did."""
    folder = _hostile_run(run, tmp_path)
    capsys.readouterr()
    main(["report", str(folder), "--all"])
    out, err = capsys.readouterr()
    assert not RAW.search(out + err), repr(RAW.search(out + err))
    assert "\\x1b]0;PWNED\\x07" in out and "\\u202eRLO" in out and "\\x9b2J" in out


@pytest.mark.parametrize(
    "draw",
    [
        lambda c: c.print(f"run {HOSTILE}"),  # an f-string a command forgot to pass through visible
        lambda c: c.print(Text(HOSTILE)),
        lambda c: c.rule(HOSTILE),
        lambda c: c.print(_table(HOSTILE)),
    ],
)
def test_the_console_every_command_prints_through_shows_control_characters(
    draw: Callable[[Any], None],
) -> None:
    """The structural rule: whatever a command prints through `terminal_console`, a string, a Text, a rule
    or a table cell, reaches the terminal as visible escapes; rich's own colours still do their work."""
    from simulator.visible import terminal_console

    buffer = StringIO()
    console = terminal_console(file=buffer, width=300, force_terminal=True, color_system="standard")
    draw(console)
    shown = _STYLE.sub("", buffer.getvalue())  # rich's own SGR colour codes, which it writes around text
    assert not RAW.search(shown), repr(shown)
    assert "\\x1b]0;PWNED" in shown


def _table(cell: str) -> Table:
    table = Table("column")
    table.add_row(cell)
    return table


def test_the_report_header_shows_the_run_id_and_suite_name_as_text(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _hostile_run(run, tmp_path)
    capsys.readouterr()
    main(["report", str(folder)])
    out = capsys.readouterr().out
    joined = "".join(out[: out.index("Summary")].splitlines())  # the header, its folded lines joined
    assert "<script>x\\x1b]0;PWNED" in joined and "suitex\\x1b]0;PWNED" in joined, joined
    assert not RAW.search(joined)


def test_a_console_given_by_the_caller_still_gets_the_header_shown_by_visible(
    run: Path, tmp_path: Path
) -> None:
    """The header escapes its names itself, so a plain rich console passed in (the API's) is safe too."""
    from rich.console import Console

    from simulator.analysis.rundata import load_run
    from simulator.report.model import build_report
    from simulator.report.terminal import render_terminal

    folder = _hostile_run(run, tmp_path)
    buffer = StringIO()
    render_terminal(build_report(load_run(folder)), Console(file=buffer, width=200))
    assert not RAW.search(buffer.getvalue().split("Summary")[0])


# ---- 4: the header states an equation only when it holds --------------------------------------------------


def _info(**fields: Any) -> RunInfo:
    base: dict[str, Any] = {
        "run_id": "r", "path": "p", "status": "complete", "created_at": "2026-01-01T00:00:00Z", "ended_at": None,
        "suite": "s", "suite_file": None, "bot": "b", "user_model": "u", "judge_model": None, "runs": 3,
        "scenarios": 22, "vignettes": 22, "conversations": 66, "planned": 66, "planned_scenarios": 22,
        "planned_vignettes": 22, "git_commit": None, "package_version": "0", "judge_set": None, "judge_sets": [],
        "warnings": [],
    }  # fmt: skip
    return RunInfo.model_validate({**base, **fields})


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({}, "22 vignettes × 3 runs = 66 conversations (planned 66)"),
        (  # kill -9 mid-run: 6 vignettes reached, 17 conversations (6 × 3 = 18 is false too)
            {"status": "running", "scenarios": 6, "vignettes": 6, "conversations": 17},
            "17 of 66 planned conversations (22 vignettes × 3 runs); 6 of 22 vignettes reached",
        ),
        (  # a run killed where the equation happens to hold: still 24 of 66, never "= 24 conversations"
            {"status": "running", "scenarios": 8, "vignettes": 8, "conversations": 24},
            "24 of 66 planned conversations (22 vignettes × 3 runs); 8 of 22 vignettes reached",
        ),
        (  # the last line cut short
            {"conversations": 65},
            "65 of 66 planned conversations (22 vignettes × 3 runs); all 22 vignettes reached",
        ),
        (  # a shard plans a part of the scenarios' runs: no shape that would not multiply out
            {"conversations": 30, "planned": 33, "scenarios": 11, "vignettes": 11},
            "30 of 33 planned conversations; 11 of 22 vignettes reached",
        ),
    ],
)
def test_the_header_count_is_never_a_false_equation(fields: dict[str, Any], shown: str) -> None:
    assert _info(**fields).counted == shown


def test_a_partial_runs_header_and_json_say_what_was_recorded_of_what_was_planned(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(run, tmp_path)
    lines = (folder / CONVERSATIONS).read_text().splitlines(keepends=True)
    (folder / CONVERSATIONS).write_text("".join(lines[:5]) + lines[5][:40])  # a kill -9 mid-line
    capsys.readouterr()
    main(["report", str(folder), "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert "5 of 14 planned conversations (7 vignettes × 2 runs); 3 of 7 vignettes reached" in " ".join(
        out.split()
    )
    assert " = 5 conversations" not in out
    info = json.loads((tmp_path / "r.json").read_text())["run"]
    assert (info["conversations"], info["planned"], info["planned_scenarios"], info["planned_vignettes"]) == (
        5, 14, 7, 7,
    )  # fmt: skip


@pytest.mark.parametrize("value", ["s", "EMERGENCY", "", "no_decision"])
@pytest.mark.parametrize("command", ["report", "gate"])
def test_a_decided_outcome_that_is_no_column_of_the_run_is_one_line(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, command: str
) -> None:
    """A verdict's decided outcome edited to a value judging never writes ended the report in a ValueError
    (`columns.index`): one line naming the verdicts file and the conversation now."""
    folder = _copy(run, tmp_path)
    edited: list[str] = []

    def edit(number: int, line: dict[str, Any]) -> None:
        if line.get("criterion_id") == "outcome.triage_level" and line.get("outcome") and not edited:
            line["outcome"]["value"] = value
            edited.append(line["conversation_id"])

    _edit_lines(folder, VERDICTS, edit)
    assert edited
    _refused(folder, capsys, command, str(folder / VERDICTS), f"[outcome of {edited[0]}]", repr(value))
