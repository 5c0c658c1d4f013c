"""`kill -9` in the middle of a run (issue 11, item 5): after a resume the run holds every conversation once,
the report says a session was killed and its calls were counted only up to its last checkpoint, and the calls
it reports are at least the model answers the finished conversations recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from simulator.cli import main
from simulator.record.folder import RunFolder, latest_by_id
from simulator.testing.fake_llm import FakeLLMServer, LatencyModel
from tests._live_run import child_env, lines, start_run, write_suite

SCENARIOS = 60
RUNS = 2


def _kill_after_a_checkpoint(process: subprocess.Popen[bytes], out: Path) -> None:
    """SIGKILL once the session has checkpointed and finished more conversations after it."""
    deadline = time.monotonic() + 120
    seen_at_checkpoint = None
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
        try:
            manifest = json.loads((out / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        if (
            seen_at_checkpoint is None
            and manifest["sessions"]
            and manifest["sessions"][-1].get("checkpoint_at")
        ):
            seen_at_checkpoint = lines(out / "conversations.jsonl")
        if seen_at_checkpoint is not None and lines(out / "conversations.jsonl") >= seen_at_checkpoint + 3:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
            return
    raise AssertionError("the run ended before it could be killed after a checkpoint; make it longer")


def test_kill_9_then_resume_counts_and_says_so(tmp_path: Path, bot_module: str) -> None:
    env = child_env(tmp_path)
    out = tmp_path / "run"
    with FakeLLMServer(latency=LatencyModel.fixed(0.05)) as server:
        suite = write_suite(tmp_path / "suite", bot_module, server.openai_base_url, SCENARIOS, RUNS)
        process = start_run(suite, out, tmp_path)
        _kill_after_a_checkpoint(process, out)
        assert process.returncode == -signal.SIGKILL
        resume = [sys.executable, "-m", "simulator", "run", "--resume", str(out), "--no-progress"]
        subprocess.run(resume, cwd=tmp_path, env=env, check=True, stdout=subprocess.DEVNULL, timeout=300)
    folder = RunFolder.open(out)
    manifest = folder.read_manifest()
    assert manifest.status == "complete" and len(manifest.killed_sessions()) == 1
    records = list(folder.conversations())
    assert len(latest_by_id(records)) == SCENARIOS * RUNS
    recorded = sum(u.calls for r in latest_by_id(records).values() for u in r.usage_by_role.values())
    report = tmp_path / "r.json"
    html = tmp_path / "r.html"
    assert main(["report", str(out), "--json", str(report), "--html", str(html), "--quiet"]) == 0
    info = json.loads(report.read_text())["run"]
    assert info["killed_sessions"] == 1
    assert info["provider_calls_at_least"] >= recorded > 0
    assert info["provider_calls_at_least"] >= info["provider_calls"]
    note = "provider call counts are incomplete: 1 session of this run was killed"
    assert any(note in warning for warning in info["warnings"])
    assert note in html.read_text()
    terminal = subprocess.run(
        [sys.executable, "-m", "simulator", "report", str(out)],
        cwd=tmp_path,
        env={**env, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert note in terminal and f"at least {info['provider_calls_at_least']}" in terminal
