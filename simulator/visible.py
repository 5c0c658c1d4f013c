"""Text from a run, made safe to print on a terminal: control characters shown, never obeyed.

A bot (or a model) can answer with terminal escape codes: write the clipboard (OSC 52), set the window title,
clear the screen, hide text with a carriage return, reorder it with bidirectional overrides. Transcripts are
data, so every such character is printed as a visible escape (`\\x1b`, `\\u202e`) instead. A problem's
message (errors.py) quotes values from the user's files and goes through the same rule on one line, and so
does every string of an HTML page (`html_text`): a browser obeys a bidi override as a terminal does, so a
transcript could show a reviewer words in another order than the bot sent them.

This module is the one home of text bound for the terminal: a command's plain line (`echo`), its JSON on
standard output (`echo_json`), its rich output (`terminal_console`), argparse's usage and errors
(`TerminalParser`), the collector's and the desk's log lines (`terminal_log_handler`) and uvicorn's own lines
in every server the package runs (`server_log_config`) all pass the rule above. A run folder's name, a
scenario id, a model name or a bot's reply in an f-string is shown, never obeyed. tests/test_terminal_output.py
fails on a `print` or a standard stream's `write` anywhere else, and on a uvicorn server without that config.
"""

from __future__ import annotations

__all__ = [
    "TerminalParser",
    "echo",
    "echo_json",
    "html_text",
    "json_visible",
    "server_log_config",
    "terminal_console",
    "terminal_log_handler",
    "visible",
    "visible_markup",
]

import argparse
import contextlib
import functools
import html
import re
import sys
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

    from _typeshed import SupportsWrite
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

# C0 controls except tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the Unicode format
# characters that reorder or hide text (bidi embeddings, overrides and isolates, zero-width joiners aside).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufff9-\ufffb]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every control or text-reordering character replaced by its visible escape."""
    shown = _CONTROL.sub(_escape, text)
    return shown if keep_newlines else shown.replace("\n", "\\n")


def json_visible(text: str) -> str:
    """JSON text with the control characters JSON allows raw (C1, bidi) written as `\\uXXXX` escapes: the same
    JSON value, safe on a terminal."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(
    *objects: object,
    sep: str = " ",
    end: str = "\n",
    file: IO[str] | None = None,
    flush: bool = False,
) -> None:
    """`print` for the terminal: each object's text shown by `visible` (the line's own words are unchanged, a
    value from a file, a run or a bot cannot move the cursor or retitle the window)."""
    print(*(visible(str(o)) for o in objects), sep=sep, end=end, file=file, flush=flush)


def echo_json(text: str, *, end: str = "\n", file: IO[str] | None = None) -> None:
    """JSON text on standard output (or `file`), its raw C1, bidi and DEL characters written as `\\uXXXX`
    escapes by `json_visible`: the same JSON value for a program, inert on a terminal."""
    (file or sys.stdout).write(json_visible(text) + end)


class TerminalParser(argparse.ArgumentParser):
    """argparse's parser whose usage, help and errors are shown by `visible`: an error quotes the argument a
    user typed (an unknown choice, a bad number), and a pasted argument can hold an escape code."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            with contextlib.suppress(AttributeError, OSError):  # as argparse: no stream, or a closed one
                (file or sys.stderr).write(visible(message))


def terminal_log_handler(
    stream: IO[str] | None = None, *, levels: bool = False, clean: Callable[[str], str] | None = None
) -> logging.Handler:
    """A logging handler for the terminal (standard error by default): each formatted record (its traceback
    too) shown by `visible`, so a logged value (a rejected request's field, an exception's message) is shown,
    not obeyed. `levels`: each line starts with its level in the command line's words (`warning: `);
    `clean`: the caller's rewrite of the line before it is shown (its secret redaction: the record's
    redaction sits above this module)."""
    import logging

    class VisibleFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            text = super().format(record)
            if levels:
                text = f"{record.levelname.lower()}: {text}"
            return visible(clean(text) if clean is not None else text)

    handler = logging.StreamHandler(stream)
    handler.setFormatter(VisibleFormatter("%(message)s"))
    return handler


def server_log_config(clean: Callable[[str], str] | None = None) -> dict[str, Any]:
    """uvicorn's logging configuration (its `log_config`) for every server the package runs (the collector's
    receiver, the review desk, the environment's MCP server): uvicorn's own lines (a refused request, an
    application's traceback, a port already taken) and any access line go to standard error through
    `terminal_log_handler`, with their level, in plain text (no colour, tty or not), shown by `visible` and
    `clean`ed by the caller, instead of through uvicorn's own handlers. The level stays uvicorn's `log_level`.
    """
    handler = {"()": terminal_log_handler, "levels": True, "clean": clean}
    return {
        "version": 1,
        "disable_existing_loggers": False,  # the package's own loggers (the collector's notices) stay
        "handlers": {"terminal": handler},
        "loggers": {
            "uvicorn": {"handlers": ["terminal"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO", "propagate": True},  # through "uvicorn"
            "uvicorn.access": {"handlers": ["terminal"], "level": "INFO", "propagate": False},
        },
    }


def visible_markup(text: str) -> str:
    """`text` for a rich markup string: control characters visible and markup brackets escaped, so a name
    from a file (a labeller, a tag, an id) is printed as it is, never obeyed by the terminal or by rich."""
    from rich.markup import escape

    return escape(visible(text))


@functools.cache
def _visible_console() -> type[Console]:
    """The console class, made on first use: rich is imported by the commands that print, not by `--help`."""
    from rich.console import Console
    from rich.segment import Segment

    class VisibleConsole(Console):
        """A rich console whose every segment of text is shown by `visible` as it is rendered: a title, a table
        cell, a rule or an f-string from a run folder or a file cannot reach the terminal raw, whichever call
        printed it. Rich's own control segments (cursor moves) and its styles (applied after) are kept. A
        string given to `print` is shown so before it is laid out, so its width counts the escapes."""

        def print(self, *objects: Any, **options: Any) -> None:
            super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **options)

        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                if segment.control is None and _CONTROL.search(segment.text):
                    yield Segment(visible(segment.text), segment.style)
                else:
                    yield segment

    return VisibleConsole


def terminal_console(**options: Any) -> Console:
    """The console every command prints through (rich's options as given): control and text-reordering
    characters shown as escapes, never obeyed (`VisibleConsole`)."""
    return _visible_console()(**options)


def html_text(value: Any) -> str:
    """`value` for HTML text or a quoted attribute: control and text-reordering characters made visible, then
    escaped (the HTML report's and the desk's one escape of a transcript string)."""
    return html.escape(visible(str(value)), quote=True)
