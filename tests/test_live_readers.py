"""Readers never modify a run being written (issue 11, item 2): report, show, compare and labels export run
again and again against a run a real `simulator run` process is writing; a second writer (judge, resume) is
refused while it writes; the finished run holds every conversation once."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import RunFolder, latest_by_id
from simulator.testing.fake_llm import FakeLLMServer, LatencyModel
from tests._live_run import lines, start_run, write_suite

SCENARIOS = 30
RUNS = 2


def _status(out: Path) -> str:
    return str(json.loads((out / "manifest.json").read_text())["status"])


def test_readers_and_a_second_writer_against_a_live_run(
    tmp_path: Path, bot_module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    rounds = 0
    codes: dict[str, set[int]] = {}
    with FakeLLMServer(latency=LatencyModel.fixed(0.03)) as server:
        suite = write_suite(tmp_path / "suite", bot_module, server.openai_base_url, SCENARIOS, RUNS)
        process = start_run(suite, out, tmp_path)
        try:
            while process.poll() is None:
                if lines(out / "conversations.jsonl") == 0:
                    continue
                rounds += 1
                for name, argv in (
                    ("report", ["report", str(out), "--json", str(tmp_path / "r.json"), "--quiet"]),
                    ("show", ["show", str(out), "--raw"]),
                    ("compare", ["compare", str(out), str(out)]),
                    (
                        "labels",
                        [
                            "labels",
                            "export",
                            str(out),
                            "--criterion",
                            "outcome.triage_level",
                            "--out",
                            str(tmp_path / "sheet"),
                        ],
                    ),
                    ("judge", ["judge", str(out)]),
                    ("resume", ["run", "--resume", str(out), "--no-progress"]),
                ):
                    code = main(argv)
                    codes.setdefault(name, set()).add(code)
                    # Still "running" after the call returned: the writer held its lock all along.
                    if name in ("judge", "resume") and _status(out) == "running":
                        assert code == 2
                        assert "is being written by another simulator process" in capsys.readouterr().err
                capsys.readouterr()
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=300) == 0
    assert rounds >= 3, "the run finished before the readers could read it several times"
    assert codes["report"] == codes["show"] == codes["labels"] == {0}
    assert codes["compare"] <= {0, 2}  # two views of one live run may differ in their scenario sets
    assert 2 in codes["judge"] and 2 in codes["resume"]  # refused while the run was being written
    folder = RunFolder.open(out)
    assert folder.read_manifest().status == "complete"
    records = list(folder.conversations())
    assert len(records) == len(latest_by_id(records)) == SCENARIOS * RUNS  # every one, once
    assert json.loads((tmp_path / "r.json").read_text())["run"]["run_id"]
