"""A full disk or a folder that cannot be written ends in one line naming the path and the fix (issue 30,
item 4), never a traceback; a run that hits it keeps what finished, is marked interrupted, and resumes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import CONVERSATIONS, WRITER_LOCK
from tests.test_report_support import make_judged_run

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
FULL = Path("/dev/full")  # every write fails with ENOSPC
UNWRITABLE = Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")  # EACCES, even for root

pytestmark = pytest.mark.skipif(not FULL.exists() or sys.platform != "linux", reason="needs Linux /dev/full")

FILLING_BOT = """
import os
from pathlib import Path

class Bot:
    def __init__(self):
        self.turn = 0

    def send(self, text):
        self.turn += 1
        out = Path(os.environ["FILL_RUN"]) / "conversations.jsonl"
        if out.exists() and not out.is_symlink() and len(out.read_text().splitlines()) >= 2:
            out.rename(out.with_suffix(".kept"))  # the disk fills up after two conversations
            out.symlink_to("/dev/full")
        return "Please call 999." if self.turn > 1 else "How old are you?"

    def final_state(self):
        return {"triage_level": "emergency"}

def make():
    return Bot()
"""


@pytest.mark.parametrize("flag", ["--html", "--json", "--junit"])
def test_a_report_onto_a_full_disk_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    capsys.readouterr()
    assert main(["report", str(run), flag, str(FULL), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(FULL) in err and "disk is full" in err and "Traceback" not in err


def test_a_compare_json_onto_a_full_disk_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    capsys.readouterr()
    assert main(["compare", str(run), str(run), "--json", str(FULL)]) == 2
    err = capsys.readouterr().err
    assert str(FULL) in err and "disk is full" in err and "Traceback" not in err


def test_a_run_that_fills_the_disk_is_interrupted_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "filling_bot.py").write_text(FILLING_BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "s.yaml").write_text("id: s1\npersona: p\ngoal: g\nexpected: {triage_level: emergency}\n")
    (folder / "suite.yaml").write_text(
        textwrap.dedent(
            """
            scenarios: {paths: ["."]}
            bot: {type: python, factory: "filling_bot:make"}
            user: {model: offline}
            runs: 5
            concurrency: 1
            """
        )
    )
    out = tmp_path / "run"
    monkeypatch.setenv("FILL_RUN", str(out))
    assert main(["run", str(folder / "suite.yaml"), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(out / CONVERSATIONS) in err and "--resume" in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    kept = out / "conversations.kept"
    assert len(kept.read_text().splitlines()) == 2  # what finished before the disk filled is kept
    (out / CONVERSATIONS).unlink()
    kept.rename(out / CONVERSATIONS)  # space freed
    monkeypatch.setenv("FILL_RUN", str(tmp_path / "elsewhere"))
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert len((out / CONVERSATIONS).read_text().splitlines()) == 5


@pytest.mark.parametrize("command", ["resume", "judge"])
def test_a_run_folder_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    if not UNWRITABLE.exists():
        pytest.skip("no read-only sysfs file here")
    run = make_judged_run(tmp_path / "tiny")
    (run / WRITER_LOCK).unlink(missing_ok=True)
    (run / WRITER_LOCK).symlink_to(UNWRITABLE)
    argv = ["run", "--resume", str(run), "--no-progress"] if command == "resume" else ["judge", str(run)]
    # Another process: this one already holds the folder's writer lock from making the run.
    done = subprocess.run(
        [sys.executable, "-m", "simulator", *argv], capture_output=True, text=True, env=ENV, cwd=run.parent
    )
    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert err.count("\n") == 1 and "cannot write" in err and WRITER_LOCK in err and "permission" in err
