"""SIGINT and SIGTERM stop a run cleanly even when SIGINT was inherited as ignored (a job started with `&`),
as issue 30 item 5 found: finished work kept, the run marked interrupted, exit 130 or 143, and it resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent
SLOW = "import time\nclass B:\n    def send(self, t):\n        time.sleep(0.05)\n        return 'How long?'\ndef make():\n    return B()\n"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does for a job started with `&`


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
@pytest.mark.parametrize("inherited", ["ignored", "default"])
def test_a_stop_signal_ends_the_run_and_keeps_its_work(
    suite_dir: Path, tmp_path: Path, bot_module: str, stop: int, code: int, inherited: str
) -> None:
    (suite_dir / f"{bot_module}_slow.py").write_text(SLOW)
    suite = suite_dir / "suite.yaml"
    suite.write_text(
        suite.read_text()
        .replace(f"{bot_module}:make", f"{bot_module}_slow:make")
        .replace("runs: 3", "runs: 300")
    )
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{suite_dir}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "run", str(suite), "--out", str(out), "--no-progress"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if inherited == "ignored" else _default_sigint,
    )
    conversations = out / "conversations.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (
        conversations.exists() and conversations.read_text().count("\n") >= 2
    ):
        time.sleep(0.1)
    proc.send_signal(stop)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err and "interrupted" in err
    folder = RunFolder.open(out)
    assert folder.read_manifest().status == "interrupted"
    kept = len(list(folder.conversations()))
    assert 2 <= kept < 300
