"""The Python API: `import simulator` is light, bots given in code (functions, objects, factories), run and
arun with typed results, run inside a running event loop (Jupyter), compare, resume, and the command line
giving the same figures as the API."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

import simulator
from simulator.cli import main
from simulator.errors import UserError
from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent

CHEST = {
    "id": "chest-1",
    "persona": "52-year-old man, short messages, downplays symptoms.",
    "goal": "Find out whether he should go to the clinic about chest discomfort.",
    "facts": ["Pressure in the chest for about two hours.", "The pain goes to the left arm."],
    "expected": {"triage_level": "emergency"},
    "tags": ["cardiac"],
}
RASH = {
    "id": "rash-1",
    "persona": "A parent writing about a child's rash.",
    "goal": "Ask what to do about a small rash.",
    "facts": ["The rash appeared this morning."],
    "expected": {"triage_level": "gp"},
    "tags": ["skin"],
}
OUTCOME = {
    "key": "triage_level",
    "levels": ["self_care", "gp", "urgent", "emergency"],
    "critical": "emergency",
}


def _suite(runs: int = 2, **fields: object) -> simulator.Suite:
    return simulator.Suite(
        bot={"type": "python", "factory": "unused:make"},
        user={"model": "offline"},
        outcome=OUTCOME,
        runs=runs,
        **fields,
    )


def emergency_bot(text: str) -> simulator.Reply:
    """A bot function: every message is an emergency."""
    return simulator.Reply(["Call 999 now."], closed=True, state={"triage_level": "emergency"})


def gp_bot(text: str) -> simulator.Reply:
    return simulator.Reply(["Please see your GP."], closed=True, state={"triage_level": "gp"})


async def async_gp_bot(text: str) -> list[str] | simulator.Reply:
    await asyncio.sleep(0)
    return simulator.Reply(["See your GP this week."], closed=True, state={"triage_level": "gp"})


class CountingBot:
    """Asks twice, then decides; its turn counter must start at 0 in every conversation."""

    def __init__(self) -> None:
        self.turns = 0

    def send(self, text: str) -> str | simulator.Reply:
        self.turns += 1
        if self.turns < 3:
            return f"Question {self.turns}: does it spread to your arm?"
        return simulator.Reply(["Call 999."], closed=True, state={"triage_level": "emergency"})

    def final_state(self) -> dict[str, object]:
        return {"triage_level": "emergency", "turns_seen": self.turns}


def test_import_simulator_loads_no_engine_and_every_public_name_resolves() -> None:
    probe = (
        "import sys, simulator; "
        "print(sorted(m for m in sys.modules if m.startswith('simulator') and m != 'simulator'))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert loaded.stdout.strip() == "[]"
    for name in simulator.__all__:
        assert getattr(simulator, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = simulator.nothing_here  # type: ignore[attr-defined]


def test_run_a_suite_built_in_code_with_a_bot_function(tmp_path: Path) -> None:
    result = simulator.run(_suite(), bot=emergency_bot, scenarios=[CHEST, RASH], out=tmp_path / "run")
    assert isinstance(result, simulator.Result) and result.folder == tmp_path / "run"
    assert (result.overall.k, result.overall.n) == (2, 4)
    assert result.scenario_status("chest-1") == ["pass", "pass"]
    assert result.scenario_status("rash-1") == ["fail", "fail"]
    assert result.outcome is not None and (result.outcome.over_triage.k, result.outcome.over_triage.n) == (
        2,
        4,
    )
    assert len(result.conversations) == 4 and result.session is not None and result.session.finished == 4
    manifest = RunFolder.open(result.folder).read_manifest()
    assert manifest.models.bot == "callable:tests.test_api.emergency_bot"


def test_result_renders_html_json_and_the_terminal_report(tmp_path: Path) -> None:
    result = simulator.run(_suite(), bot=gp_bot, scenarios=[CHEST], out=tmp_path / "run")
    page = result.to_html()
    assert page.startswith("<!doctype html>") and "chest-1" in page
    data = json.loads(result.to_json())
    assert data["overall"]["k"] == 0 and data["overall"]["n"] == 2
    console = Console(file=StringIO(), width=120)
    result.print(console)
    assert "under-triage" in console.file.getvalue().lower()  # type: ignore[attr-defined]


def test_a_result_shows_its_headline_in_a_notebook_and_escapes_it(tmp_path: Path) -> None:
    result = simulator.run(_suite(), bot=gp_bot, scenarios=[CHEST, RASH], out=tmp_path / "run<b>")
    text = repr(result)
    assert "2 vignettes × 2 runs = 4 conversations" in text
    assert "emergency sensitivity: 0/2" in text  # the chest pain sent to a GP, both times
    assert "under-triage: 2/4" in text and "errors (counted apart, never pass or fail): 0" in text
    assert "BUG" in text or "WARNING" in text  # the missed emergency is a finding
    page = result._repr_html_()
    assert "run&lt;b&gt;" in page and "run<b>" not in page
    assert simulator.Result(tmp_path / "nothing-here").summary() == []  # a repr never raises


@pytest.mark.parametrize(
    ("bot", "expected"),
    [
        (async_gp_bot, ["fail", "fail"]),
        (CountingBot, ["pass", "pass"]),  # a class: a fresh object per conversation
        (CountingBot(), ["pass", "pass"]),  # an object: copied, each conversation starts at turns = 0
        (lambda: CountingBot(), ["pass", "pass"]),  # a factory of no arguments
    ],
)
def test_every_kind_of_bot_given_in_code(tmp_path: Path, bot: object, expected: list[str]) -> None:
    result = simulator.run(_suite(), bot=bot, scenarios=[CHEST], out=tmp_path / "run")
    assert result.scenario_status("chest-1") == expected
    for record in RunFolder.open(result.folder).conversations():
        if isinstance(bot, CountingBot) or bot is CountingBot:
            assert record.final_state == {"triage_level": "emergency", "turns_seen": 3}


def test_an_object_used_for_every_conversation_is_never_changed(tmp_path: Path) -> None:
    bot = CountingBot()
    simulator.run(_suite(), bot=bot, scenarios=[CHEST], out=tmp_path / "run")
    assert bot.turns == 0


@pytest.mark.parametrize(
    ("bot", "message"),
    [
        (42, "is not a bot"),
        (lambda a, b: "x", "takes 2 arguments"),
        ("not a factory", "not a valid bot config"),
        ("openai:gpt-4.1-mini", "a model bot needs a system prompt"),
    ],
)
def test_a_wrong_bot_is_one_clear_error(tmp_path: Path, bot: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        simulator.run(_suite(), bot=bot, scenarios=[CHEST], out=tmp_path / "run")


def test_no_suite_needs_scenarios_and_a_bot(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no scenarios"):
        simulator.run(bot=gp_bot)
    with pytest.raises(UserError, match="no bot"):
        simulator.run(scenarios=[CHEST])
    result = simulator.run(bot=gp_bot, scenarios=[CHEST], user_model="offline", out=tmp_path / "run")
    assert result.scenario_status("chest-1") == ["fail"]  # the default suite: one run, no outcome levels


async def test_run_works_inside_a_running_event_loop_as_in_jupyter(tmp_path: Path) -> None:
    asyncio.get_running_loop()  # this test body runs on a loop, as a notebook cell does
    result = simulator.run(_suite(), bot=emergency_bot, scenarios=[CHEST], out=tmp_path / "sync")
    assert result.scenario_status("chest-1") == ["pass", "pass"]
    again = await simulator.arun(_suite(), bot=emergency_bot, scenarios=[CHEST], out=tmp_path / "async")
    assert (again.overall.k, again.overall.n) == (result.overall.k, result.overall.n)


def test_the_callers_suite_is_never_changed(tmp_path: Path) -> None:
    suite = _suite()
    simulator.run(suite, bot=gp_bot, scenarios=[CHEST], runs=1, tags=["cardiac"], out=tmp_path / "run")
    assert suite.bot.type == "python" and suite.runs == 2 and suite.scenarios.tags == []


def test_compare_a_list_of_bots_on_the_same_scenarios(tmp_path: Path) -> None:
    board = simulator.compare(_suite(), bots=[emergency_bot, gp_bot], scenarios=[CHEST], out=tmp_path / "m")
    assert isinstance(board, simulator.Comparison) and list(board.results) == ["emergency_bot", "gp_bot"]
    assert board["emergency_bot"].scenario_status("chest-1") == ["pass", "pass"]
    assert board["gp_bot"].scenario_status("chest-1") == ["fail", "fail"]
    assert board.best == "emergency_bot" and board.leaderboard.baseline == "emergency_bot"
    assert "emergency_bot" in board.to_markdown() and board.to_html().startswith("<!doctype html>")
    assert json.loads(board.to_json())["matrix_id"] == "m"


def test_compare_models_of_the_suites_chat_bot(tmp_path: Path) -> None:
    # The decision tool sets the scenario's expected key: a chat bot that never sets it is refused (issue 30).
    bot = {
        "type": "chat",
        "model": "test:default",
        "system_prompt": "You triage.",
        "decision_tool": {"field": "triage_level"},
    }
    suite = simulator.Suite(bot=bot, user={"model": "offline"}, runs=1)
    board = simulator.compare(
        suite, models=["test:default", "test:default?seed=2"], scenarios=[RASH], out=tmp_path / "m"
    )
    assert list(board.results) == ["test-default", "test-default-seed-2"]
    bots = {cell: RunFolder.open(result.folder).read_manifest().models.bot for cell, result in board}
    assert bots == {"test-default": "chat:test:default", "test-default-seed-2": "chat:test:default?seed=2"}


def test_a_suite_with_a_matrix_is_compared_not_run(tmp_path: Path, bot_module: str) -> None:
    suite = _suite(matrix={"bots": [{"id": "a", "bot": {"factory": f"{bot_module}:make"}}]})
    with pytest.raises(UserError, match=r"simulator\.compare"):
        simulator.run(suite, scenarios=[CHEST], out=tmp_path / "run")
    board = simulator.compare(suite, scenarios=[CHEST], out=tmp_path / "m")
    assert list(board.results) == ["a"]


def test_a_run_with_a_bot_given_in_code_resumes_from_python_not_the_command_line(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    simulator.run(suite_dir / "suite.yaml", bot=CountingBot, out=folder)
    lines = (folder / "conversations.jsonl").read_text().splitlines()
    (folder / "conversations.jsonl").write_text(lines[0] + "\n")
    assert main(["run", "--resume", str(folder), "--no-progress"]) == 2
    assert (
        "callable:tests.test_api.CountingBot, a Python object given to simulator.run"
        in capsys.readouterr().err
    )
    done = simulator.resume(folder, bot=CountingBot)
    assert isinstance(done, simulator.Result) and done.session is not None and done.session.finished == 2
    assert done.scenario_status("chest-1") == ["pass", "pass", "pass"]
    inline = tmp_path / "inline"
    simulator.run(_suite(), bot=emergency_bot, scenarios=[CHEST], out=inline)
    with pytest.raises(UserError, match="given in code"):
        simulator.resume(inline, bot=emergency_bot)


def test_resume_finishes_an_interrupted_run_file_suite(tmp_path: Path, suite_dir: Path) -> None:
    folder = tmp_path / "run"
    first = simulator.run(suite_dir / "suite.yaml", out=folder)
    lines = (folder / "conversations.jsonl").read_text().splitlines()
    (folder / "conversations.jsonl").write_text("\n".join(lines[:1]) + "\n")  # two were lost
    done = simulator.resume(folder)
    assert isinstance(done, simulator.Result) and done.session is not None
    assert (done.session.skipped, done.session.finished) == (1, 2)
    assert done.scenario_status("chest-1") == first.scenario_status("chest-1")


def test_the_command_line_and_the_api_give_the_same_figures(
    tmp_path: Path, suite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(tmp_path / "cli"), "--no-progress"]) == 0
    assert "run complete: 3 conversations" in capsys.readouterr().out
    api = simulator.run(simulator.load_suite(suite_dir / "suite.yaml"), out=tmp_path / "api")
    cli = simulator.Result(tmp_path / "cli")
    assert cli.report.overall.model_dump() == api.report.overall.model_dump()
    assert [t.status for t in cli.conversations] == [t.status for t in api.conversations]
    assert [r.model_dump() for r in cli.criteria] == [r.model_dump() for r in api.criteria]


def test_load_suite_overrides_are_validated(suite_dir: Path) -> None:
    assert simulator.load_suite(suite_dir / "suite.yaml", runs=5).runs == 5
    with pytest.raises(UserError) as caught:
        simulator.load_suite(suite_dir / "suite.yaml", runs=0)
    assert "runs" in caught.value.render()
    with pytest.raises(UserError, match="runs"):
        simulator.run(simulator.load_suite(suite_dir / "suite.yaml"), runs=0)


def test_scenarios_in_code_with_a_mistake_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"scenarios\[0\]\.goal: "):
        simulator.run(_suite(), bot=gp_bot, scenarios=[{"id": "x", "persona": "p"}])
    file = tmp_path / "one.yaml"
    file.write_text(textwrap.dedent("id: from-file\npersona: p\ngoal: g\nfacts: [f]\n"))
    result = simulator.run(_suite(runs=1), bot=gp_bot, scenarios=[file], out=tmp_path / "run")
    assert [t.scenario_id for t in result.conversations] == ["from-file"]
