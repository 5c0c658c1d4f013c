"""The `simulator` command line: argparse, with every heavy import deferred to the command that needs it."""

from __future__ import annotations

__all__ = ["exit_fast", "main", "run"]

import argparse
import atexit
import contextlib
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from simulator.compiled import install as _compile_texts_once

_compile_texts_once()  # before the imports below: their dataclasses' methods are compiled text too

from simulator import __version__  # noqa: E402
from simulator.errors import UserError  # noqa: E402
from simulator.visible import TerminalParser, echo  # noqa: E402

# Modules that add their own sub-commands with `register(subparsers)`; each keeps its imports lazy.
EXTENSIONS = [
    "simulator.commands.core",
    "simulator.commands.golden",
    "simulator.commands.judge",
    "simulator.commands.report",
    "simulator.commands.scale",
    "simulator.commands.traces",
    "simulator.commands.serve",
    "simulator.commands.judge_quality",
    "simulator.commands.gate",
    "simulator.commands.authoring",
    "simulator.commands.coverage",
    "simulator.commands.drafting",
    "simulator.commands.new_suite",
    "simulator.commands.collect",
    "simulator.commands.safety",
    "simulator.commands.seal",
    "simulator.commands.propose",
    "simulator.commands.try_change",
    "simulator.commands.tau2",
]

# Commands whose sub-commands come from several of the modules above: built only with all of them.
# tests/test_cli.py compares every command's parser built alone with the whole line's, so a new one shows.
SHARED_GROUPS = frozenset({"labels", "new"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, given the command a user typed, only as far as the module that adds it:
    importing and registering all nineteen modules cost about 40 ms of a run's start-up, and the parser of
    one command needs none of the others. A group of commands (`labels ...`), an unknown command, or none,
    registers all (a later module may add to a group; the help and the error list every command)."""
    parser = TerminalParser(
        prog="simulator",
        description="Test LLM chatbots with simulated users, per-criterion judges and defensible error rates.",
    )
    parser.add_argument("--version", action="version", version=f"simulator {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in EXTENSIONS:
        importlib.import_module(name).register(subparsers)
        if command in subparsers.choices and command not in SHARED_GROUPS:
            break
    return parser


def _command(argv: list[str]) -> str | None:
    """The command word a user typed: the first argument that is not an option (`simulator --version` has
    none)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def run() -> NoReturn:
    """The `simulator` console script and `python -m simulator`: `main`, then a fast exit."""
    exit_fast(main())


def exit_fast(code: int) -> NoReturn:
    """Exit without tearing the interpreter down. Freeing every object of a thousand imported modules
    (the SDKs' types above all) took 0.3-0.7 s of CPU after the work was done; the operating system
    reclaims the memory anyway (mypy exits the same way). What a normal exit must still do is done
    first: the standard streams are flushed and the exit handlers run (Ray's shutdown, logging's flush,
    temporary folders). Every file the engine writes is closed by then."""
    _flush_standard_streams()
    atexit._run_exitfuncs()
    _flush_standard_streams()
    os._exit(code)


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing reaches it
            stream.flush()


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command(words))
    args = parser.parse_args(words)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    # `module:factory` names in a suite (python bots) are modules under the folder the user runs from. Only
    # the command line does this: a program that imports simulator keeps its own import path.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    from simulator.commands.stopping import stop_signals

    with stop_signals() as stopped:
        return _handle(handler, args, lambda: stopped.exit_code)


def _handle(
    handler: Callable[[argparse.Namespace], int], args: argparse.Namespace, stop_code: Callable[[], int]
) -> int:
    """Run one command: a user mistake, a stop signal, a closed pipe or a full disk is one line and a code."""
    try:
        return handler(args)
    except UserError as exc:
        from simulator.record.redact import redact

        # A problem quotes the user's values (a file name, a key, an echoed argument): `echo` shows them.
        echo(f"error: {redact(exc.render())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # What goes on from here is the command's to say (`set_defaults(on_interrupt=...)`): only `run` resumes.
        said = getattr(args, "on_interrupt", None)
        then = f"; {said(args)}" if said is not None else ""
        echo(f"\ninterrupted: everything finished so far is saved{then}", file=sys.stderr)
        return stop_code()
    except BrokenPipeError:
        # The reader of a pipe (`| head`) stopped reading: files were written first; stop quietly, and keep
        # Python's exit-time flush of stdout from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        from simulator.diskerrors import os_error_line

        hint = (
            "the run keeps what finished; then: simulator run --resume RUN" if args.command == "run" else None
        )
        line = os_error_line(exc, hint)
        if line is None:
            raise
        echo(f"error: {line}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        if exc.code == 1 and _stdout_is_devnull():
            return 0  # rich met the same closed pipe: it pointed stdout at /dev/null and raised SystemExit(1)
        raise


def _stdout_is_devnull() -> bool:
    try:
        out, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    return (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino)


def existing_path(value: str) -> Path:
    return Path(value)
