"""The command line exits without tearing the interpreter down, but loses nothing a normal exit keeps:
the exit code, everything written to stdout and stderr, and the exit handlers' work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import atexit, sys
from pathlib import Path
from simulator.cli import exit_fast
marker = Path(sys.argv[1])
atexit.register(lambda: marker.write_text("exit handler ran"))
sys.stdout.write("o" * int(sys.argv[2]))
sys.stderr.write("e" * int(sys.argv[2]))
exit_fast(int(sys.argv[3]))
"""


@pytest.mark.parametrize(("size", "code"), [(0, 0), (10, 2), (200_000, 130), (1_000_000, 1)])
def test_exit_fast_keeps_the_code_the_output_and_the_exit_handlers(
    tmp_path: Path, size: int, code: int
) -> None:
    marker = tmp_path / "marker"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(marker), str(size), str(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == code
    assert done.stdout == "o" * size and done.stderr == "e" * size  # buffered output all flushed
    assert marker.read_text() == "exit handler ran"


def test_exit_fast_after_the_reader_closed_the_pipe(tmp_path: Path) -> None:
    """`simulator ... | head -1`: the reader goes away; the exit is quiet, with no traceback."""
    marker = tmp_path / "marker"
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(marker), "300000", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert child.stdout is not None
    child.stdout.read(10)
    child.stdout.close()
    assert child.wait(timeout=60) in (0, 1, -13, 120)  # never a hang; a broken pipe ends it either way
    assert marker.read_text() == "exit handler ran"


def test_the_command_line_exits_fast_with_its_own_code(tmp_path: Path) -> None:
    """`python -m simulator` returns what `main` returned: 0 for help, 2 for a user error."""
    ok = subprocess.run(
        [sys.executable, "-m", "simulator", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    bad = subprocess.run(
        [sys.executable, "-m", "simulator", "validate", str(tmp_path / "missing.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert ok.returncode == 0 and ok.stdout.strip()
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr
