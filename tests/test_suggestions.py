"""One home for "did you mean" (simulator/errors.py: did_you_mean): every place that suggests a name does so
through it, so each catches what it catches (a look-alike letter from another script, other capitals or
separators, a near miss, another tool's word). Each place is fed through its own door: a file `validate`
reads, a command-line option, a Python call.

The structure is read from the source with `ast`: a second `difflib.get_close_matches` fails here the day it
is written."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import simulator
from simulator.cli import main
from simulator.errors import UserError
from tests.support.hazard_logs import one_control_log
from tests.synthetic import synthetic_outcome_run
from tests.test_api_door_more import SCENARIOS, good
from tests.test_writer_mistakes import CRITERION, _scenario, _suite

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "simulator"
HOME = PACKAGE / "errors.py"

# --- no module guesses a name itself -------------------------------------------------------------------


def _guesses(source: str) -> list[int]:
    """Lines that reach difflib's `get_close_matches`: called, imported or named."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute | ast.Name):
            if (node.attr if isinstance(node, ast.Attribute) else node.id) == "get_close_matches":
                found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "difflib":
            found += [node.lineno for alias in node.names if alias.name == "get_close_matches"]
    return found


def test_no_module_but_errors_guesses_a_name_itself() -> None:
    others = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != HOME
        for line in _guesses(path.read_text(encoding="utf-8"))
    ]
    assert others == [], f"suggest a name with simulator.errors.did_you_mean, not difflib: {others}"
    assert _guesses(HOME.read_text(encoding="utf-8")), "errors.py is the home of the guess"


@pytest.mark.parametrize(
    "source",
    [
        "import difflib\ndifflib.get_close_matches('a', ['b'])\n",
        "from difflib import get_close_matches\n",
        "from difflib import get_close_matches as close\n",
        "import difflib as d\nguess = d.get_close_matches\n",
    ],
)
def test_the_walk_finds_each_way_of_reaching_the_guess(source: str) -> None:
    assert _guesses(source)


# --- each place, through its own door ------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    """What a command prints for a user's mistake: exit 2, one message, no traceback."""
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code == 2 and "Traceback" not in said, said
    return said


def _refused(call: Callable[[], object]) -> str:
    with pytest.raises(UserError) as caught:
        call()
    return str(caught.value)


Door = Callable[[Path, pytest.CaptureFixture[str], pytest.MonkeyPatch, str], str]


def _golden_column(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    path = tmp / "items.csv"
    path.write_text(f"item_id,intent,kind,{name},reference\n", encoding="utf-8")
    return _cli(capsys, "validate", path)


ENVIRONMENT = """\
name: typo
bot: {type: python, factory: "examples.clinic_env.bot:make_bot"}
environment:
  tools:
    book_appointment: {responses: [{result: ok}]}
tool_checks:
"""


def _claim_tool(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    path = tmp / "suite.yaml"
    path.write_text(ENVIRONMENT + f"  claims:\n    - {{id: c, says: booked, tools: [{name}]}}\n", "utf-8")
    return _cli(capsys, "validate", path)


def _check_tool(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    path = tmp / "suite.yaml"
    path.write_text(ENVIRONMENT + f"  checks:\n    - {{tool_called: {name}}}\n", "utf-8")
    return _cli(capsys, "validate", path)


def _level(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    return _cli(capsys, "validate", _suite(tmp, {"s1.yaml": _scenario("s1", level=name)}))


def _applies_to(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    scenarios = {"s1.yaml": _scenario("s1", tags="cardiac"), "s2.yaml": _scenario("s2", tags="respiratory")}
    return _cli(capsys, "validate", _suite(tmp, scenarios, {"a.yaml": CRITERION.format(id="a", tag=name)}))


def _run_tags(
    tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> str:
    monkeypatch.chdir(ROOT)
    said = _cli(capsys, "run", "scenarios/triage/suite.yaml", "--tags", name, "--out", tmp / "run")
    assert not (tmp / "run" / "conversations.jsonl").exists()
    return said


def _gate_metric(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    run = synthetic_outcome_run(tmp / "run", {"s1": [True], "s2": [True]})
    return _cli(capsys, "gate", run, "--require", f"{name} <= 5%")


def _api_argument(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    return _refused(lambda: simulator.run("suite.yaml", **{name: 3}))


def _result_scenario(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    suite = simulator.Suite(bot={"type": "python", "factory": "x.y:z"}, user={"model": "offline"}, runs=1)
    result = simulator.run(suite, bot=good, scenarios=SCENARIOS, out=tmp / "run", progress=False)
    return _refused(lambda: result.scenario_status(name))


def _hazard_criterion(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    run = synthetic_outcome_run(tmp / "run", {"s1": [True], "s2": [True]})
    log = tmp / "hazards.yaml"
    log.write_text(one_control_log([name]), encoding="utf-8")
    return _cli(capsys, "safety-case", run, "--hazards", log)


def _bot_type(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    path = tmp / "suite.yaml"
    path.write_text(textwrap.dedent(f"name: s\nbot:\n  type: {name}\n  url: http://x\n"), encoding="utf-8")
    return _cli(capsys, "validate", path)


def _label_criterion(tmp: Path, capsys: pytest.CaptureFixture[str], _: pytest.MonkeyPatch, name: str) -> str:
    run = synthetic_outcome_run(tmp / "run", {"s1": [True], "s2": [True]})
    return _cli(capsys, "labels", "export", run, "--criterion", name, "--out", tmp / "sheet")


# Each place that suggests a name (its module under simulator/) and the door a user reaches it by.
DOORS: dict[str, Door] = {
    "golden": _golden_column,  # a golden CSV's column
    "claims": _claim_tool,  # a claim rule's tool
    "tool_checks": _check_tool,  # a tool check's tool
    "suite": _level,  # a scenario's expected level
    "loading": _run_tags,  # run --tags
    "writer_checks": _applies_to,  # a criterion's applies_to
    "gate": _gate_metric,  # gate --require
    "door": _api_argument,  # a Python call's argument
    "result": _result_scenario,  # result.scenario_status
    "hazard_check": _hazard_criterion,  # a hazard control's criterion
    "registry": _bot_type,  # a suite's bot type
    "calibrate": _label_criterion,  # labels export --criterion
}

# (door, what the user wrote, what they meant). \u0430, \u0435, \u0440, \u0441 and \u0455 are Cyrillic
# letters drawn as a, e, p, c and s.
CASES = [
    ("golden", "user_m\u0435ssage", "user_message"),
    ("golden", "USER_MESSAGE", "user_message"),
    ("golden", "user-message", "user_message"),
    ("golden", "user_mesage", "user_message"),
    ("claims", "book_\u0430ppointment", "book_appointment"),
    ("claims", "BOOK_APPOINTMENT", "book_appointment"),
    ("claims", "book_appointmnet", "book_appointment"),
    ("tool_checks", "book_\u0430ppointment", "book_appointment"),
    ("tool_checks", "BOOK_APPOINTMENT", "book_appointment"),
    ("tool_checks", "Book-Appointment", "book_appointment"),
    ("tool_checks", "book_apointment", "book_appointment"),
    ("suite", "\u0435mergency", "emergency"),
    ("suite", "EMERGNCY", "emergency"),
    ("suite", "Self Care", "self_care"),
    ("loading", "\u0441ardiac", "cardiac"),
    ("loading", "CARDIAC", "cardiac"),
    ("loading", "cardaic", "cardiac"),
    ("writer_checks", "\u0441ardiac", "cardiac"),
    ("writer_checks", "CARDIAC", "cardiac"),
    ("writer_checks", "Respiratory", "respiratory"),
    ("writer_checks", "cardaic", "cardiac"),
    ("gate", "und\u0435r_triage", "under_triage"),
    ("gate", "Under_Triage", "under_triage"),
    ("gate", "under-triage", "under_triage"),
    ("gate", "undertriage", "under_triage"),
    ("door", "run\u0455", "runs"),
    ("door", "RUNS", "runs"),
    ("door", "repeats", "runs"),
    ("door", "runz", "runs"),
    ("result", "\u0441hest", "chest"),
    ("result", "CHEST", "chest"),
    ("result", "chset", "chest"),
    ("hazard_check", "outcome.triage_l\u0435vel", "outcome.triage_level"),
    ("hazard_check", "Outcome.Triage_Level", "outcome.triage_level"),
    ("hazard_check", "outcome.triage_levl", "outcome.triage_level"),
    ("registry", "htt\u0440", "http"),
    ("registry", "HTTP", "http"),
    ("registry", "htp", "http"),
    ("calibrate", "outcome.triage_l\u0435vel", "outcome.triage_level"),
    ("calibrate", "OUTCOME.TRIAGE_LEVEL", "outcome.triage_level"),
    ("calibrate", "outcome.triage_levl", "outcome.triage_level"),
]


def test_every_place_that_suggests_is_tried() -> None:
    assert {module for module, _, _ in CASES} == set(DOORS)


@pytest.mark.parametrize(("module", "written", "meant"), CASES, ids=[f"{m}-{w}" for m, w, _ in CASES])
def test_each_place_suggests_what_was_meant(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    written: str,
    meant: str,
) -> None:
    said = DOORS[module](tmp_path, capsys, monkeypatch, written)
    if written.isascii():
        assert f"did you mean '{meant}'?" in said, said
    else:  # which letter is not what it looks like, and what to type
        assert f"'{written}' looks like '{meant}' but has" in said and "Cyrillic" in said, said
        assert f"retype it as '{meant}'" in said, said
