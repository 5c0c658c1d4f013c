"""Hostile text reaching the terminal through the commands: a run folder's name, a scenario id kept in a run's
records, a model's name, an argument typed on the command line and a bot's reply, each holding escape
codes, is printed with its control characters shown (`\\x1b`), never obeyed (simulator/visible.py)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from simulator.cli import main
from tests._terminal_bots import HOSTILE

# Each kind of sequence a transcript could use against a terminal. Folder names cannot hold '/'.
SEQUENCES = {
    "csi": "\x1b[2J\x1b[31m",
    "osc8": "\x1b]8;;x\x1b\\link\x1b]8;;\x1b\\",
    "title": "\x1b]0;pwned\x07",
    "cr": "\rPASS",
    "c1": "\x9b31m",
    "bidi": "\u202eevil",
}
# Written independently of visible.py's rule, so a rule that forgot a class of character fails here.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _shown(text: str) -> None:
    """No control character reached the terminal, and something was shown in its place."""
    assert RAW.findall(text) == [], repr(text)
    assert re.search(r"\\(x[0-9a-f]{2}|u202e|r)", text), repr(text)  # argparse's repr() writes \r


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A suite whose python bot answers every turn with escape codes (tests/_terminal_bots.py)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain.yaml").write_text("id: plain\npersona: p\ngoal: ask about a cough\nmax_turns: 2\n")
    (tmp_path / "suite.yaml").write_text(
        "name: hostile\nscenarios: {paths: [plain.yaml]}\n"
        "bot: {type: python, factory: 'tests._terminal_bots:make_bot'}\nuser: {model: offline}\nruns: 1\n"
    )
    return tmp_path


def _run(project: Path, capsys: pytest.CaptureFixture[str], name: str) -> Path:
    out = project / name
    assert main(["run", "suite.yaml", "--out", str(out), "--no-progress"]) == 0
    said = capsys.readouterr().out
    assert RAW.findall(said) == [], repr(said)  # the summary names the run folder
    return out


@pytest.mark.parametrize("kind", sorted(SEQUENCES))
def test_an_argument_argparse_refuses_is_shown(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["report", "RUN", "--no-such-flag", SEQUENCES[kind]])
    assert stopped.value.code == 2
    _shown(capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main([f"run{SEQUENCES[kind]}"])  # an unknown command is quoted in argparse's error too
    _shown(capsys.readouterr().err)


@pytest.mark.parametrize("kind", sorted(SEQUENCES))
def test_the_run_summary_shows_the_folder_name(
    kind: str, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = project / f"run{SEQUENCES[kind]}"
    assert main(["run", "suite.yaml", "--out", str(run), "--no-progress"]) == 0
    _shown(capsys.readouterr().out)
    assert main(["run", "--resume", str(run)]) == 0
    _shown(capsys.readouterr().out)


def test_report_of_a_bot_that_replied_with_escapes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(project, capsys, f"run{SEQUENCES['title']}")
    page = project / f"page{SEQUENCES['csi']}{SEQUENCES['bidi']}.html"
    assert main(["report", str(run), "--html", str(page)]) == 0
    said = capsys.readouterr()
    _shown(said.out)
    _shown(said.err)  # "wrote HTML <the file named>"
    assert page.is_file()


def test_show_and_compare_of_a_bot_that_replied_with_escapes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _run(project, capsys, f"a{SEQUENCES['osc8']}")
    b = _run(project, capsys, f"b{SEQUENCES['c1']}{SEQUENCES['cr']}")
    assert main(["show", str(a)]) == 0
    shown = capsys.readouterr().out
    _shown(shown)
    assert "\\x1b]0;pwned\\x07" in shown  # the bot's reply, escaped (tests/_terminal_bots.py)
    assert main(["compare", str(a), str(b)]) == 0
    _shown(capsys.readouterr().out)


def test_a_warning_naming_a_scenario_id_from_a_run_record(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(project, capsys, "run")
    records = run / "conversations.jsonl"
    records.write_text(records.read_text().replace('"plain"', '"plain\\u001b]0;x\\u0007\\u202e"'))
    assert main(["judge", str(run), "--suite", "suite.yaml"]) == 0
    err = capsys.readouterr().err
    assert "scenarios no longer in their files" in err
    _shown(err)


@pytest.mark.parametrize("kind", sorted(SEQUENCES))
def test_the_judge_family_warning_shows_the_model_name(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.config.suite import Suite
    from simulator.judging.stage import make_judge_stage
    from simulator.providers.hub import ModelHub

    suite = Suite.model_validate(
        {
            "bot": {"type": "chat", "model": "anthropic:claude-haiku-4-5", "system_prompt": "You triage."},
            "user": {"model": "offline"},
            "judges": {"model": f"anthropic:claude-{SEQUENCES[kind]}"},
        }
    )
    make_judge_stage(suite, [], ModelHub())
    err = capsys.readouterr().err
    assert "same family (claude)" in err
    _shown(err)


@pytest.mark.parametrize("bar", [False, True])
@pytest.mark.parametrize("kind", sorted(SEQUENCES))
def test_a_progress_note_is_shown(kind: str, bar: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.engine.progress import RunProgress

    with RunProgress(1, enabled=bar) as progress:
        progress.note(f"worker failed: {SEQUENCES[kind]} [bold]not markup[/bold]")
        progress.waiting(f"waiting {SEQUENCES[kind]}")
        progress.advance(f"stop{SEQUENCES[kind]}")
    err = capsys.readouterr().err
    _shown(err)
    assert "[bold]not markup[/bold]" in err  # a note is text, never rich markup


def test_the_collectors_notices_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.collect.supervise import LOGGER
    from simulator.commands.collect import _say_notices

    handlers, level, propagate = list(LOGGER.handlers), LOGGER.level, LOGGER.propagate
    try:
        _say_notices()
        LOGGER.warning("collect: rejected %s", HOSTILE)
    finally:
        LOGGER.handlers[:], LOGGER.propagate = handlers, propagate
        LOGGER.setLevel(level)
    _shown(capsys.readouterr().err)


def test_the_desks_warnings_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.visible import terminal_log_handler

    logger = logging.getLogger("simulator.serve")
    handler = terminal_log_handler()
    logger.addHandler(handler)
    try:
        logger.warning("desk: ending idle talk %s failed", HOSTILE)
    finally:
        logger.removeHandler(handler)
    _shown(capsys.readouterr().err)


def test_validate_names_a_hostile_file_shown(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = project / f"suite{SEQUENCES['title']}{SEQUENCES['bidi']}.yaml"
    suite.write_text((project / "suite.yaml").read_text())
    assert main(["validate", str(suite)]) == 0
    _shown(capsys.readouterr().out)
    scenario = project / f"plain{SEQUENCES['csi']}{SEQUENCES['cr']}.yaml"
    scenario.write_text("id: plain\npersona: p\ngoal: g\n")  # the id differs from the file's name
    assert main(["validate", str(scenario)]) == 2
    _shown(capsys.readouterr().err)
