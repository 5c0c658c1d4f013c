"""The command line as a whole: every command is reachable and dispatches to a handler."""

from __future__ import annotations

import argparse
import contextlib
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


def test_a_command_s_parser_built_alone_is_the_one_the_whole_line_builds() -> None:
    """`build_parser(command)` stops at the module that adds the command: each command's own parser (its
    options, help and sub-commands) is the same as in the whole command line, for every command."""
    whole = {path: sub.format_help() for path, sub in leaf_commands(build_parser())}
    for path in whole:
        alone = dict((p, sub.format_help()) for p, sub in leaf_commands(build_parser(path[0])))
        assert alone[path] == whole[path], path


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["no-such-command"], "invalid choice"),  # the error lists every command
        ([], "COMMAND"),  # no command: the whole help
        (["--version"], "simulator "),
    ],
)
def test_without_a_known_command_the_whole_line_is_built(
    argv: list[str], shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) if argv else contextlib.nullcontext():
        main(argv)
    said = capsys.readouterr()
    assert shown in said.out + said.err
    if argv == ["no-such-command"]:
        assert all(name in said.err for name in ("run", "collect", "tau2", "safety"))


def test_run_s_parser_imports_no_other_command_module() -> None:
    """The start-up saving, held: `simulator run --help` imports only the module that adds `run`."""
    code = (
        "import sys\n"
        "from simulator.cli import main\n"
        "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('simulator.commands.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.strip().splitlines()[-1]
    assert "simulator.commands.core" in loaded and "simulator.commands.collect" not in loaded, loaded
