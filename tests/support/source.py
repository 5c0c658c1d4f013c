"""The package's source, read and parsed once per test process.

About twenty structural tests (layers, one base model, function length, public names, terminal output, ...)
each read and parse every module; parsing the package takes about a second of CPU, so they share these
caches. Callers must not change a tree they are given: it is the one every other test reads.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "simulator"


@functools.cache
def modules(root: Path = PACKAGE) -> tuple[Path, ...]:
    """Every `.py` file under `root`, sorted."""
    return tuple(sorted(root.rglob("*.py")))


def source_text(path: Path) -> str:
    """The file's text, read again only when it changed (a test may rewrite a planted file)."""
    status = path.stat()
    return _read(path, status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=4096)
def _read(path: Path, mtime_ns: int, size: int) -> str:
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=4096)
def parsed(text: str) -> ast.Module:
    """`ast.parse(text)`, once per text (a planted example in a test is parsed as any other)."""
    return ast.parse(text)


@functools.lru_cache(maxsize=4096)
def walked(text: str) -> tuple[ast.AST, ...]:
    """Every node of `text`'s tree, in `ast.walk`'s order."""
    return tuple(ast.walk(parsed(text)))
