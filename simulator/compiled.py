"""Source text compiled once: the methods dataclasses generate and the string annotations typing evaluates.

Python 3.11 compiles, at import, the text of every method a dataclass generates (`__init__`, `__repr__`,
`__eq__`, ...: one `exec` of a few lines each, each parsed and compiled anew) and of every string annotation
pydantic evaluates (`typing.ForwardRef` compiles each one, `str | None` hundreds of times). A one-conversation
`simulator run` did this 417 and 1,429 times: 0.28 G of its 1.75 G instructions, mostly for the dataclasses of
pydantic, annotated_types and h11 (issue 47). `install()`, which the command line calls first, puts a memo
in front of both: one text is compiled once a process, and the code objects are kept beside the package's
bytecode (in `__pycache__`, where and when Python writes its `.pyc` files: not under
PYTHONDONTWRITEBYTECODE) for the next process to load instead of compiling again.

A code object depends only on its text, file name, mode and compiler flags, all of them in the key (the
flags are those the call would have used: none, neither module having a `__future__` import), so what runs
is what compiling would have made; a file written by another Python version, or unreadable, is ignored."""

from __future__ import annotations

__all__ = ["install"]

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import typing
from pathlib import Path
from types import CodeType
from typing import Any

_Key = tuple[str, str, str]  # (mode, file name, source text)

_MAGIC = sys.implementation.cache_tag or ""
# Entries kept from earlier processes beside this one's (texts of other versions of a library age out).
_KEEP_AT_MOST = 20_000

_memo: dict[_Key, CodeType] = {}
_used: set[_Key] = set()
_compiled_here = 0
_installed = False


def _memo_path() -> Path | None:
    """Where the compiled texts are kept: `__pycache__` beside the package's own bytecode (None when this
    Python keeps no bytecode cache)."""
    import importlib.util

    try:
        pyc = importlib.util.cache_from_source(str(Path(__file__).with_name("compiled_texts.py")))
    except NotImplementedError:  # sys.implementation.cache_tag is None
        return None
    return Path(pyc).with_suffix(".marshal")


def _compiled(source: str, filename: str, mode: str) -> CodeType:
    global _compiled_here
    key = (mode, filename, source)
    code = _memo.get(key)
    if code is None:
        code = builtins.compile(source, filename, mode, 0, True)  # no flags of this module's own
        _memo[key] = code
        _compiled_here += 1
    _used.add(key)
    return code


def _exec(source: Any, globals: Any = None, locals: Any = None) -> None:
    """dataclasses' `exec(text, globals, ns)` of a generated method, its text compiled once."""
    if globals is None:  # the caller's globals, as the built-in takes them: dataclasses' own
        globals = vars(dataclasses)
    if isinstance(source, str):
        source = _compiled(source, "<string>", "exec")
    builtins.exec(source, globals, locals)


def _compile(source: Any, filename: Any, mode: str, *more: Any, **options: Any) -> Any:
    """typing's `compile(text, '<string>', 'eval')` of a forward reference, compiled once."""
    if isinstance(source, str) and isinstance(filename, str) and not more and not options:
        return _compiled(source, filename, mode)
    return builtins.compile(source, filename, mode, *more, **options)


def _load(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        stored = marshal.loads(path.read_bytes())
        if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _MAGIC:
            _memo.update(stored[1])


def _save(path: Path) -> None:
    """Write the texts compiled here, with those loaded that fit, if this process compiled any."""
    if not _compiled_here or sys.dont_write_bytecode:
        return
    kept = {key: _memo[key] for key in _used}
    for key, code in _memo.items():
        if len(kept) >= _KEEP_AT_MOST:
            break
        kept.setdefault(key, code)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):  # a read-only install: the next process compiles again
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(marshal.dumps((_MAGIC, kept)))
        os.replace(temporary, path)
    with contextlib.suppress(OSError):
        temporary.unlink(missing_ok=True)


def install() -> None:
    """Memoise dataclasses' and typing's compiling of text (once a process; the command line calls it)."""
    global _installed
    if _installed:
        return
    _installed = True
    path = _memo_path()
    if path is not None:
        _load(path)
        atexit.register(_save, path)
    # Each module looks the built-in up among its own globals first: this shadows it there and nowhere else.
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    typing.compile = _compile  # type: ignore[attr-defined]
