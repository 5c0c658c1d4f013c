"""Every way the package writes to the terminal passes simulator/visible.py, the one home of terminal text:
a `print`, a write to a standard stream, a rich console, an argparse parser or a logging handler anywhere
else could carry a run's, a file's or a bot's control characters to the user's terminal raw, and so could a
uvicorn server left with its own logging handlers.

Read from the source (an AST walk, as tests/test_layers.py reads imports), so a new raw `print` fails here
before any hostile input has to find it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.source import modules, parsed, source_text

PACKAGE = Path(__file__).resolve().parent.parent / "simulator"
HOME = "simulator/visible.py"

STREAMS = {"sys.stdout", "sys.stderr", "sys.__stdout__", "sys.__stderr__"}
# What may be done with a standard stream outside the home: name it as where `echo` or a log handler writes,
# flush it, or ask for its file descriptor. Anything else (`.write`, `.buffer`, `.writelines`) writes raw.
STREAM_ATTRIBUTES = {"fileno", "flush"}
STREAM_RECEIVERS = {"echo", "echo_json", "terminal_log_handler"}
# Calls that make a writer of their own, bypassing the home's rule: its replacement in brackets.
WRITERS = {
    "argparse.ArgumentParser": "TerminalParser",
    "logging.StreamHandler": "terminal_log_handler",
    "logging.basicConfig": "terminal_log_handler",
    "Console": "terminal_console",
    "rich.console.Console": "terminal_console",
    "rich.print": "terminal_console().print",
    "pprint.pprint": "echo",
    "traceback.print_exc": "echo(traceback.format_exc())",
    "traceback.print_exception": "echo(traceback.format_exception(...))",
}

# uvicorn configures its own logging handlers (coloured, straight to the terminal) unless it is given ours.
SERVERS = {"uvicorn.run", "uvicorn.Config", "uvicorn.config.Config"}
LOG_CONFIG = "server_log_config"

# Writes proven constant or machine-readable, by module and function, with the reason. Each must exist.
ALLOWED: dict[tuple[str, str], str] = {
    ("simulator/cli.py", "_flush_standard_streams"): "loops over both streams to flush them; writes nothing",
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in modules():
        name = path.relative_to(PACKAGE.parent).as_posix()
        if name != HOME:
            yield name, parsed(source_text(path))


def _functions(tree: ast.Module) -> dict[ast.AST, str]:
    """Each node of the module mapped to the name of the innermost function that holds it ('' at the top)."""
    owner: dict[ast.AST, str] = {}

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            owner[child] = inner
            visit(child, inner)

    visit(tree, "")
    return owner


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _stream_use_is_fine(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """A standard stream used only as `echo`'s or a log handler's target, flushed, or asked its fileno."""
    parent = parents[node]
    if isinstance(parent, ast.Attribute):
        return parent.attr in STREAM_ATTRIBUTES
    if isinstance(parent, ast.keyword):
        parent = parents[parent]
    return isinstance(parent, ast.Call) and ast.unparse(parent.func) in STREAM_RECEIVERS


def _raw_writes(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    parents = _parents(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "print":
            yield node, "print: use simulator.visible.echo"
        elif isinstance(node, ast.Attribute) and ast.unparse(node) in STREAMS:
            if not _stream_use_is_fine(node, parents):
                yield node, f"{ast.unparse(parents[node])}: write through simulator.visible.echo"
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in WRITERS:
            yield node, f"{ast.unparse(node.func)}: use simulator.visible.{WRITERS[ast.unparse(node.func)]}"
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in SERVERS and not _logs_visibly(node):
            yield node, f"{ast.unparse(node.func)}: pass log_config=simulator.visible.{LOG_CONFIG}(...)"
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "rich"
            and "print" in {a.name for a in node.names}
        ):
            yield node, "rich's print: use simulator.visible.terminal_console"
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "os.write" and _to_a_stream(node):
            yield node, "os.write to a standard stream: use simulator.visible.echo"


def _logs_visibly(call: ast.Call) -> bool:
    """A uvicorn server given the home's logging configuration (`log_config=server_log_config(...)`)."""
    return any(
        keyword.arg == "log_config"
        and isinstance(keyword.value, ast.Call)
        and ast.unparse(keyword.value.func).endswith(LOG_CONFIG)
        for keyword in call.keywords
    )


def _to_a_stream(call: ast.Call) -> bool:
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Constant) and first.value in (1, 2)


def _offences() -> tuple[list[str], set[tuple[str, str]]]:
    found, allowed_used = [], set()
    for name, tree in _modules():
        owner = _functions(tree)
        for node, why in _raw_writes(tree):
            where = (name, owner.get(node, ""))
            if where in ALLOWED:
                allowed_used.add(where)
            else:
                found.append(f"{name}:{getattr(node, 'lineno', '?')} {why}")
    return found, allowed_used


def test_text_reaches_the_terminal_only_through_the_home() -> None:
    found, _ = _offences()
    assert found == [], "raw writes to the terminal outside simulator/visible.py:\n" + "\n".join(found)


def test_every_allowed_write_still_exists() -> None:
    _, used = _offences()
    assert set(ALLOWED) == used, f"allowed writes no longer in the source: {sorted(set(ALLOWED) - used)}"


def test_the_walk_finds_each_kind_of_raw_write() -> None:
    source = (
        "import sys, argparse, logging, os\nfrom rich import print as p\nfrom rich.console import Console\n"
        "print('x')\nsys.stdout.write('x')\nsys.stderr.buffer.write(b'x')\nw = sys.stdout\n"
        "argparse.ArgumentParser()\nlogging.StreamHandler()\nConsole()\nos.write(1, b'x')\nf = print\n"
        "echo('ok', file=sys.stderr)\nsys.stdout.flush()\nsys.stdout.fileno()\n"
        "uvicorn.run(app)\nuvicorn.Config(app, log_level='warning')\nuvicorn.Config(app, log_config=None)\n"
        "uvicorn.Config(app, log_config=server_log_config(clean=redact))\nuvicorn.run(app, log_config=server_log_config())\n"
    )
    lines = sorted(getattr(node, "lineno", 0) for node, _ in _raw_writes(parsed(source)))
    assert lines == [2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 18]
