"""The command line as a whole: every command is reachable and dispatches to a handler."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from simulator.cli import build_parser, main


def leaf_commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command path (`golden run`, `labels export`, ...) with its parser."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += leaf_commands(sub, (*prefix, name)) or [((*prefix, name), sub)]
    return found


def test_every_command_has_a_handler() -> None:
    commands = leaf_commands(build_parser())
    names = {" ".join(path) for path, _ in commands}
    assert {"run", "validate", "show", "schema", "judge", "report", "compare", "calibrate"} <= names
    assert {"golden run", "golden report", "golden compare", "labels export"} <= names
    missing = [" ".join(path) for path, sub in commands if sub.get_default("handler") is None]
    assert missing == []


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["golden", "run", "--help"]])
def test_help_exits_cleanly(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 0 and "usage: simulator" in capsys.readouterr().out


def test_the_console_entry_point_runs_as_a_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("simulator ")
