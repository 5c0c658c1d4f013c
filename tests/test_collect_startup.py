"""`simulator collect` that cannot start says why in one line naming the path and exits 2, never with
uvicorn's traceback and "Application startup failed": an output folder of the wrong shape or one the system
refuses, a state file that is a folder, a pseudonym key that is a folder, an earlier folder's damaged
manifest. The journal is recovered before uvicorn serves, so a failure there reaches the command line's
one-line rule (before, the failures of recovery ended in uvicorn's traceback and exit 3)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.traces_helpers import ROOT


def _file_above(tmp: Path) -> tuple[Path, str]:
    (tmp / "a-file").write_text("not a folder")
    return tmp / "a-file" / "out", "a-file/out/.collect"


def _state_is_a_file(tmp: Path) -> tuple[Path, str]:
    (tmp / "out").mkdir()
    (tmp / "out" / ".collect").write_text("not a folder")
    return tmp / "out", "out/.collect"


def _folder_at(name: str) -> Callable[[Path], tuple[Path, str]]:
    def make(tmp: Path) -> tuple[Path, str]:
        (tmp / "out" / ".collect" / name).mkdir(parents=True)
        return tmp / "out", f"out/.collect/{name}"

    return make


def _link_at(name: str, target: str) -> Callable[[Path], tuple[Path, str]]:
    def make(tmp: Path) -> tuple[Path, str]:
        (tmp / "out" / ".collect").mkdir(parents=True)
        (tmp / "out" / ".collect" / name).symlink_to(target)
        return tmp / "out", f"out/.collect/{name}"

    return make


def _damaged_manifest(tmp: Path) -> tuple[Path, str]:
    folder = tmp / "out" / "live-20240101-001"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text('{"run_id": "live-20240101-001", "status": ')
    return tmp / "out", "out/live-20240101-001/manifest.json"


def _refused_by_the_system(tmp: Path) -> tuple[Path, str]:
    # The kernel's own file system takes no new folder, even from root (where chmod would not stop a write).
    return Path("/sys/kernel/simulator-collect-out"), "/sys/kernel/simulator-collect-out"


CASES = {
    "a file above the output folder": (_file_above, "a part of that path is a file"),
    "the state folder is a file": (_state_is_a_file, "a file stands where the collector keeps a folder"),
    # Read back through the bounded reader (a journal linked to /dev/zero is refused too), which says so.
    "the spool is a folder": (_folder_at("spool.jsonl"), "a folder, not a regular file"),
    "the markers are a folder": (_folder_at("closed.jsonl"), "a folder, not a regular file"),
    # Before, `Spool.load` read a journal whole: one linked to /dev/zero never finished starting.
    "the spool is a link to /dev/zero": (_link_at("spool.jsonl", "/dev/zero"), "a character device"),
    "the markers are a link to /dev/zero": (_link_at("closed.jsonl", "/dev/zero"), "a character device"),
    "the pseudonym key is a folder": (_folder_at("pseudonym.key"), "a folder, not a regular file"),
    "an earlier folder's manifest is damaged": (_damaged_manifest, "the file was edited or damaged"),
    "an output folder the system refuses": (_refused_by_the_system, ""),
}


@pytest.mark.parametrize("case", list(CASES))
def test_collect_that_cannot_start_is_one_line_naming_the_path(tmp_path: Path, case: str) -> None:
    make, says = CASES[case]
    out, named = make(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "collect", "--port", "0", "--out", str(out)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,  # a collector that started would serve for ever: this fails the test instead
    )
    err = done.stderr
    assert done.returncode == 2, err
    assert "Traceback" not in err and "Application startup failed" not in err, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert named in err and says in err, err
    assert "collecting OTLP/HTTP" not in done.stdout  # it never said it was collecting


class _Bug(Exception):
    """A defect in start-up that no user input explains."""


@pytest.mark.parametrize("raised", [_Bug("recovery broke"), KeyError("created_at"), OSError(5, "I/O error")])
def test_an_unexpected_start_up_error_is_the_command_lines_not_uvicorns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: Exception
) -> None:
    """A bug stays a bug, raised from the command like every other command's (the CLI's rule), not
    swallowed by uvicorn into "Application startup failed" and exit 3."""
    from simulator.cli import main
    from simulator.collect.service import Collector

    def start(self: Collector, now: float | None = None) -> None:
        raise raised

    monkeypatch.setattr(Collector, "start", start)
    with pytest.raises(type(raised)) as caught:
        main(["collect", "--port", "0", "--out", str(tmp_path / "out")])
    assert caught.value is raised


@pytest.mark.parametrize(
    ("raised", "says"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "cannot write {out}: No space left on device"),
        (
            OSError(errno.EROFS, "Read-only file system", "{out}/.collect/spool.jsonl"),
            "read-only file system",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", "{out}/.collect"),
            "no permission to write there",
        ),
        (NotADirectoryError(errno.ENOTDIR, "Not a directory", "{out}/live-1"), "cannot use {out}/live-1"),
        (OSError(errno.ENAMETOOLONG, "File name too long", "{out}/x"), "name a shorter --out"),
        (OSError(errno.EIO, "Input/output error", "{out}/.collect/closed.jsonl"), "check that path"),
    ],
)
def test_an_os_error_under_the_output_folder_is_the_users_one_line(
    tmp_path: Path, raised: OSError, says: str
) -> None:
    from simulator.collect.build import state_problems
    from simulator.errors import UserError

    out = tmp_path / "out"
    if raised.filename is not None:
        raised.filename = raised.filename.format(out=out)
    with pytest.raises(UserError) as caught, state_problems(out):
        raise raised
    assert str(caught.value).startswith(f"--out {out}: ") and says.format(out=out) in str(caught.value)


@pytest.mark.parametrize(
    "raised",
    [
        OSError(
            errno.EIO, "Input/output error"
        ),  # names no file and is no disk error: not known to be --out's
        OSError(errno.ENOTDIR, "Not a directory", "/elsewhere/x"),
        OSError(errno.EACCES, "Permission denied", "{out}2/.collect"),  # a sibling sharing the name's start
        ValueError("not an OSError"),
    ],
)
def test_an_error_not_on_the_output_folder_passes_unchanged(tmp_path: Path, raised: Exception) -> None:
    from simulator.collect.build import state_problems

    out = tmp_path / "out"
    if isinstance(raised, OSError) and raised.filename is not None:
        raised.filename = raised.filename.format(out=out)
    with pytest.raises(type(raised)) as caught, state_problems(out):
        raise raised
    assert caught.value is raised
