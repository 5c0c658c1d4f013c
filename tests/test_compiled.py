"""simulator/compiled.py: dataclasses' generated methods, typing's forward references and re's patterns
compiled once, and kept beside the bytecode for the next process; what runs is what compiling would have
made."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from simulator.compiled import _may_warn
from tests.support.projects import cough_project

ROOT = Path(__file__).resolve().parent.parent

# Builds the same dataclasses and forward references before and after `install()`, in one fresh process.
_PROBE = """
import dataclasses, json, re, sys, typing

PATTERNS = [(r"(?P<word>\\w+)\\s+(?P=word)", 0), (r"a|b|c", re.I), (rb"[\\x00-\\x7f]+", 0),
            (r"(?x) a  b  # a comment", 0), (r"\\bI'm\\b", re.I | re.M), ("(?i)caf\u00e9(?=s)", 0)]

def build():
    @dataclasses.dataclass(frozen=True, order=True)
    class Frozen:
        a: int
        b: 'str | None' = None
        c: tuple = dataclasses.field(default_factory=tuple)

    @dataclasses.dataclass(slots=True)
    class Plain:
        x: 'dict[str, int]'
        y: float = 1.5

    ref = typing.ForwardRef('dict[str, int] | None')
    patterns = [re._compiler.compile(p, f) for p, f in PATTERNS]  # past re's own cache
    return Frozen, Plain, ref, patterns

def codes(Frozen, Plain, ref, patterns):
    methods = [getattr(cls, name) for cls in (Frozen, Plain) for name in vars(cls) if name.startswith('__')]
    return [m.__code__ for m in methods if hasattr(m, '__code__')] + [ref.__forward_code__]

def groups(patterns):
    return [(p.groups, dict(p.groupindex), p.flags, p.pattern) for p in patterns]

before = build()
from simulator import compiled
compiled.install()
loaded = len(compiled._memo)
after = build()
Frozen, Plain, ref, patterns = after
import warnings
with warnings.catch_warnings(record=True) as warned:
    warnings.simplefilter('always')
    nested = [re._compiler.compile('[[a]', 0) for _ in range(2)]  # warns each time: never kept
try:
    re._compiler.compile('(unclosed', 0)
except re.error as exc:
    error = str(exc)
print(json.dumps({
    'same_code': codes(*before) == codes(*after) and before[3] == patterns,
    'same_groups': groups(before[3]) == groups(patterns), 'found': patterns[0].search('a b b').group('word'),
    'warned': len(warned), 'error': error,
    'count': len(codes(*after)),
    'annotations': str(Frozen.__init__.__annotations__) == str(before[0].__init__.__annotations__),
    'repr': repr(Frozen(1, 'b')), 'order': Frozen(1) < Frozen(2), 'hash': hash(Frozen(1)) == hash(Frozen(1)),
    'slots': Plain.__slots__, 'eval': str(typing.get_type_hints(Plain)),
    'loaded': loaded, 'compiled_here': compiled._compiled_here, 'kept_patterns': [str(k[1]) for k in compiled._patterns],
}))
"""


def _probe(tmp_path: Path, *, write: bool) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    flags = [] if write else ["-B"]
    done = subprocess.run(
        [sys.executable, *flags, "-X", f"pycache_prefix={tmp_path}", "-c", _PROBE],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _memo_files(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.rglob("compiled_texts.*.marshal"))


def test_what_runs_is_what_compiling_makes_and_the_next_process_compiles_nothing(tmp_path: Path) -> None:
    first = _probe(tmp_path, write=True)
    assert first["same_code"] and first["annotations"] and first["count"] == 14
    assert first["repr"] == "build.<locals>.Frozen(a=1, b='b', c=())" and first["order"] and first["hash"]
    assert first["slots"] == ["x", "y"] and first["eval"] == "{'x': dict[str, int], 'y': <class 'float'>}"
    assert first["loaded"] == 0 and first["compiled_here"] > 0
    assert first["same_groups"] and first["found"] == "b" and first["warned"] == 2
    assert first["error"] == "missing ), unterminated subpattern at position 0"
    assert len(_memo_files(tmp_path)) == 1  # beside the bytecode, where pycache_prefix puts it
    second = _probe(tmp_path, write=True)
    assert second["same_code"] and second["same_groups"] and second["warned"] == 2
    assert second["loaded"] + len(second["kept_patterns"]) == first["compiled_here"]  # type: ignore[arg-type]
    assert second["compiled_here"] == 0  # every text came from the file, and is equal to a fresh compile


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path: Path) -> None:
    assert _probe(tmp_path, write=False)["same_code"]
    assert _memo_files(tmp_path) == []


def test_a_broken_or_foreign_file_is_ignored(tmp_path: Path) -> None:
    _probe(tmp_path, write=True)
    (memo,) = _memo_files(tmp_path)
    for content in (b"not marshal at all", b"\xe3" * 7, __import__("marshal").dumps(("cpython-27", {}))):
        memo.write_bytes(content)
        again = _probe(tmp_path, write=True)
        assert again["same_code"] and again["loaded"] == 0 and again["compiled_here"] > 0


def test_a_second_run_compiles_no_text(tmp_path: Path) -> None:
    # The start-up this saves (0.2 G instructions of a one-conversation run's 1.75 G): a command line run
    # compiles its dataclasses' methods and string annotations once, and the next run none of them.
    cough_project(tmp_path, "memo", "tests.gc_probe_bot:make_bot")
    probe = (
        "import atexit, sys\nfrom simulator import compiled\nfrom simulator.cli import main\n"
        "atexit.register(lambda: print('COMPILED', compiled._compiled_here, len(compiled._memo) + len(compiled._patterns)))\n"
        "code = main(sys.argv[1:])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    counts = []
    for n in range(2):
        argv = ["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / f"run{n}"), "--no-progress"]
        done = subprocess.run(
            [sys.executable, "-X", f"pycache_prefix={tmp_path / 'cache'}", "-c", probe, *argv],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        counts.append([int(n) for n in done.stdout.split("COMPILED")[-1].split()])
    (first_compiled, first_memo), (second_compiled, second_memo) = counts
    assert first_compiled > 300 and first_memo == first_compiled  # the dataclasses and annotations were met
    assert second_compiled == 0 and second_memo >= first_memo


@pytest.mark.parametrize(
    "pattern",
    ["[[a]", "[a--b]", "[a&&b]", "[a||b]", "[a~~b]", "x[ab[]", "[^[a]", "(?x) # [ a comment\n [a--b]"],
)
def test_a_pattern_re_could_warn_about_is_left_to_re(pattern: str) -> None:
    assert _may_warn(pattern)


@pytest.mark.parametrize(
    "pattern",
    [r"[a-z]+[0-9]", r"\[x\]--", r"[]a]&&", r"[^]a]", r"a||b", r"[\]\[]", "(?x) [a-z] # a comment", "", "["],
)
def test_a_pattern_re_never_warns_about_is_kept(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # re's parser does not warn about any of them
        with contextlib.suppress(re.error):
            re._compiler.compile(pattern, 0)  # type: ignore[attr-defined]
    assert not _may_warn(pattern)
