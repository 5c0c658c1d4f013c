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
is what compiling would have made; a file written by another Python version, or unreadable, is ignored.

Regular expressions the same way: `re` parses and translates a pattern in Python (155 patterns a run, of
PyYAML, the standard library and this package, compiled at import) before `_sre.compile` makes the
Pattern from the translation. The translation of a (pattern, flags) is kept with the texts, and the Pattern
is made from it by the same call (a Pattern equals another of the same pattern, flags and translation);
a pattern whose parsing could warn, or fails, is left to `re` every time."""

from __future__ import annotations

__all__ = ["install"]

import _sre
import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import re
import sys
import typing
from pathlib import Path
from types import CodeType
from typing import Any

_Key = tuple[str, str, str]  # (mode, file name, source text)
_PatternKey = tuple[str, str | bytes, int]  # (str or bytes, pattern, flags)

_MAGIC = f"{sys.implementation.cache_tag} {sys.hexversion} sre {_sre.MAGIC}"  # any other Python: ignored
# Entries kept from earlier processes beside this one's (texts of other versions of a library age out).
_KEEP_AT_MOST = 20_000

_memo: dict[_Key, CodeType] = {}
_used: set[_Key] = set()
_patterns: dict[_PatternKey, tuple[Any, ...]] = {}  # what _sre.compile takes after the pattern
_patterns_used: set[_PatternKey] = set()
_translate: Any = re._compiler.compile  # type: ignore[attr-defined]
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


def _compile_pattern(pattern: Any, flags: int = 0) -> Any:
    """`re`'s pattern compiler (re._compiler.compile), its translation of a pattern kept."""
    global _compiled_here
    if not isinstance(pattern, (str, bytes)) or flags & re.DEBUG:
        return _translate(pattern, flags)
    key = (type(pattern).__name__, pattern, int(flags))  # a plain int: re.I is a RegexFlag
    made = _patterns.get(key)
    if made is None:
        made = _translation(pattern, flags)
        if made is None:  # re raises and warns as always
            return _translate(pattern, flags)
        _patterns[key] = made
        _compiled_here += 1
    _patterns_used.add(key)
    flags_, code, groups, groupindex, indexgroup = made
    return _sre.compile(pattern, flags_, code, groups, dict(groupindex), indexgroup)


def _translation(pattern: str | bytes, flags: int) -> tuple[Any, ...] | None:
    """What re._compiler.compile hands to _sre.compile after the pattern (None when parsing it could warn
    or fails: re then compiles it, and says so, itself)."""
    if _may_warn(pattern if isinstance(pattern, str) else pattern.decode("latin-1")):
        return None
    try:
        parsed = re._parser.parse(pattern, flags)  # type: ignore[attr-defined]
        code = re._compiler._code(parsed, flags)  # type: ignore[attr-defined]
    except Exception:  # re's own call raises it again
        return None
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    # Plain ints: the translation holds the opcodes as named int constants, which marshal does not take.
    flags_ = int(flags | parsed.state.flags)
    return (flags_, [int(op) for op in code], parsed.state.groups - 1, groupindex, tuple(indexgroup))


def _may_warn(text: str) -> bool:
    """Whether re's parser could warn about `text`: its only warnings are FutureWarnings about a set
    holding a `[` or a doubled `-&~|` ("possible nested set"). Any such set, as a scan that keeps to re's
    reading of a set (a first `]` is a literal, a backslash escapes the next character) finds it, leaves
    the pattern to re, which warns every time as it always did; so does anything the scan is unsure of."""
    i, end = 0, len(text)
    while i < end:
        if text[i] == "\\":
            i += 2
        elif text[i] != "[":
            i += 1
        else:
            i += 2 if text.startswith("[^", i) else 1
            i += 1 if text.startswith("]", i) else 0
            while i < end and text[i] != "]":
                if text[i] == "[" or text[i : i + 2] in ("--", "&&", "~~", "||"):
                    return True
                i += 2 if text[i] == "\\" else 1
            i += 1
    return False


def _load(path: Path) -> None:
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        stored = marshal.loads(path.read_bytes())
        if (
            isinstance(stored, tuple)
            and len(stored) == 3
            and stored[0] == _MAGIC
            and isinstance(stored[1], dict)
            and isinstance(stored[2], dict)
        ):
            _memo.update(stored[1])
            _patterns.update(stored[2])


def _save(path: Path) -> None:
    """Write the texts compiled here, with those loaded that fit, if this process compiled any."""
    if not _compiled_here or sys.dont_write_bytecode:
        return
    texts, patterns = _kept(_memo, _used), _kept(_patterns, _patterns_used)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError, ValueError):  # a read-only install: the next process compiles again
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(marshal.dumps((_MAGIC, texts, patterns)))
        os.replace(temporary, path)
    with contextlib.suppress(OSError):
        temporary.unlink(missing_ok=True)


def _kept(memo: dict[Any, Any], used: set[Any]) -> dict[Any, Any]:
    """What this process used, then what it loaded, up to _KEEP_AT_MOST."""
    kept = {key: memo[key] for key in used}
    for key, value in memo.items():
        if len(kept) >= _KEEP_AT_MOST:
            break
        kept.setdefault(key, value)
    return kept


def install() -> None:
    """Memoise dataclasses' and typing's compiling of text and re's of patterns (the command line calls it)."""
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
    if hasattr(re._compiler, "_code") and hasattr(re._parser, "parse"):  # type: ignore[attr-defined]
        re._compiler.compile = _compile_pattern  # type: ignore[attr-defined]
