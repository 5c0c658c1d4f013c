"""Every command README.md and docs/*.md show runs, as written, and prints what the page shows under it.

One test per page: its commands run in order, in a fresh folder holding the repo's content (scenarios/ copied,
since a page may write a suite there; judges/ and examples/ linked), offline, with no API key. A command runs
in this process (`simulator.cli.main`), so a page's later commands read the run folders its earlier ones made.
A command the test cannot run offline is in `NOT_RUNNABLE` (tests/support/doc_commands.py) with its reason; a
new command that is neither runnable nor listed fails here. How to show a command: docs/development.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from simulator.cli import main
from tests.support.doc_commands import (
    NOT_RUNNABLE,
    ROOT,
    Step,
    missing_lines,
    pages,
    runnable_args,
    steps,
    why_not_run,
    without_optional,
)


def _params() -> list[object]:
    found = []
    for page in pages():
        if not any(step.is_simulator for step in steps(page)):
            continue
        # One test per page, not grouped: xdist spreads the pages over its workers (the longest, loop.md and
        # safety-case.md, take about 10 s each on a quiet machine).
        found.append(pytest.param(page, id=page.name))
    return found


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The triage demo's run folder, made once: the run a page means when it reads one it did not make."""
    folder = _folder(tmp_path_factory.mktemp("demo"))
    here = os.getcwd()
    os.chdir(folder)
    try:
        assert main(["run", "scenarios/triage/suite.yaml", "--out", "runs/demo", "--no-progress"]) == 0
    finally:
        os.chdir(here)
    return folder / "runs" / "demo"


def _folder(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios", symlinks=True)
    for name in ("judges", "examples", "tests"):  # tests/data: the tau2 page's fixture tasks
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def _run_folders(folder: Path, known: list[str]) -> list[str]:
    """The page's run folders, oldest first: `known` plus any made since."""
    made = sorted(
        (p.parent for p in folder.glob("runs/*/manifest.json") if not p.parent.is_symlink()),
        key=lambda p: p.stat().st_mtime,
    )
    return known + [str(p.relative_to(folder)) for p in made if str(p.relative_to(folder)) not in known]


def _run(step: Step, folder: Path, runs: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run one step in this process: its exit code and what it printed."""
    if step.is_setup:
        done = subprocess.run(step.command, shell=True, cwd=folder, capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr
    args = runnable_args(step.command, runs[-1] if runs else None, runs)
    try:
        code = main(args)
    except SystemExit as exc:  # argparse refuses the command line
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _problem(step: Step, code: int, output: str, folder: Path) -> str | None:
    """What is wrong with a step's run (its exit code, the output the page shows), or None."""
    if step.is_setup:
        return None if code == 0 else f"{step.where}: `{step.command}` failed: {output}"
    shows_error = any(line.startswith("error:") for line in step.shown)
    if step.exit_code is not None and code != step.exit_code:
        return f"{step.where}: `{step.command}` exited {code}, the page says exit {step.exit_code}:\n{output[-2000:]}"
    # 1 and 3 are answers (a requirement not met, a gate undecidable); 2 is a user error, anything else a crash.
    if code not in (0, 1, 3) and not (code == 2 and shows_error):
        return f"{step.where}: `{step.command}` exited {code}:\n{output[-2000:]}"
    missing = missing_lines(step.shown, output, folder)
    if missing:
        return (
            f"{step.where}: `{step.command}` does not print, in order:\n"
            + "\n".join(missing)
            + (f"\n--- it printed:\n{output[-4000:]}")
        )
    return None


@pytest.mark.timeout(300)
@pytest.mark.parametrize("page", _params())
def test_the_page_s_commands_run_and_print_what_it_shows(
    page: Path,
    tmp_path: Path,
    demo_run: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = _folder(tmp_path)
    shown = steps(page)
    runs: list[str] = []
    if not any("--out runs/demo" in step.command for step in shown):
        # A page that reads a run it did not make means the demo's (README: `simulator run ... --out runs/demo`).
        shutil.copytree(demo_run, folder / "runs" / "demo")
        runs = ["runs/demo"]
    monkeypatch.chdir(folder)
    monkeypatch.setenv("COLUMNS", "110")
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    problems = []
    done: dict[str, tuple[int, str]] = {}
    for step in shown:
        if not (step.is_simulator or step.is_setup) or why_not_run(step):
            continue
        # A page may show a run twice (a summary, then the details): the reader's folder holds its --out once.
        if not (step.command in done and "--out " in step.command):
            done[step.command] = _run(step, folder, runs, capsys)
        problem = _problem(step, *done[step.command], folder)
        if problem:
            problems.append(problem)
        runs = _run_folders(folder, runs)
    assert not problems, "\n\n".join(problems)


def test_every_command_not_run_is_still_shown_and_says_why() -> None:
    shown = {(page.name, step.command) for page in pages() for step in steps(page)}
    shown |= {(page, without_optional(command)) for page, command in shown}
    gone = sorted(set(NOT_RUNNABLE) - shown)
    assert not gone, f"remove from NOT_RUNNABLE (no page shows them): {gone}"
    assert all(len(reason.split()) >= 3 for reason in NOT_RUNNABLE.values())


def test_the_reader_finds_commands_in_every_kind_of_block() -> None:
    page = ROOT / "docs" / "reports.md"
    found = [step for step in steps(page) if step.is_simulator]
    with_output = [step for step in found if step.shown]
    assert any(step.command.startswith("simulator gate runs/<id> --require") for step in found)
    assert with_output and with_output[0].command.startswith("simulator report runs/demo")


def test_a_shown_line_that_the_command_does_not_print_is_found_missing(tmp_path: Path) -> None:
    output = (
        f"run folder: {tmp_path}/runs/20260101-120000-demo-ab12\njudge set sha256:0123456789ab took 3.2s\n"
    )
    shown = ["run folder: runs/20251231-090000-demo-ffff", "judge set sha256:ffffffffffff took 9.1s"]
    assert missing_lines(shown, output, tmp_path) == []
    assert missing_lines(["judge set sha256:ffffff took 9s", "run folder: runs/x"], output, tmp_path) == [
        "run folder: runs/x"
    ]
    assert runnable_args("simulator report runs/<id> [--html r.html]", "runs/demo", ["runs/demo"]) == [
        "report",
        "runs/demo",
    ]
