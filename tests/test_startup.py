"""Start-up: `simulator --help` imports only the command line, never the models, the record or asyncio
(which modules load, not how long it takes: timings belong in bench/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.projects import cough_project

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import contextlib, io, json, sys
from simulator.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""

HEAVY = ("pydantic", "asyncio", "yaml", "rich", "openai", "anthropic", "aiohttp", "tenacity")
HEAVY_OURS = (
    "simulator.record",
    "simulator.config",
    "simulator.providers",
    "simulator.engine",
    "simulator.report",
)


def _modules_after(*argv: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_imports_no_models_record_or_event_loop() -> None:
    for argv in (["--help"], [], ["run", "--help"], ["judge", "--help"], ["report", "--help"]):
        modules = _modules_after(*argv)
        heavy = [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY_OURS)]
        assert heavy == [], f"simulator {' '.join(argv)} imported {heavy[:8]}"
        assert "simulator.cli" in modules  # the probe really ran the command line


def test_a_command_still_imports_what_it_needs() -> None:
    modules = _modules_after("validate", str(ROOT / "scenarios" / "smoke"))
    assert "simulator.config.scenario" in modules


def test_run_starts_with_the_collector_off_and_runs_with_it_on(tmp_path: Path) -> None:
    # Start-up makes only objects that live on: `run` starts with the garbage collector off, turns it on
    # for the conversations (the run's heap is frozen first) and leaves it as it found it.
    import gc

    from simulator.cli import main
    from tests import gc_probe_bot

    suite = cough_project(tmp_path, "gc", "tests.gc_probe_bot:make_bot", "runs: 3\n")
    gc_probe_bot.SEEN.clear()
    assert gc.isenabled()
    code = main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"])
    assert code == 0 and gc.isenabled()  # put back
    assert len(gc_probe_bot.SEEN) >= 3 and all(gc_probe_bot.SEEN)  # on for every reply
    assert gc.get_freeze_count() == 0  # the run's frozen heap was unfrozen


def test_a_run_builds_no_report_it_does_not_print(tmp_path: Path) -> None:
    # Python 3.11's asyncio.Runner formats the main task (and with it the run's Result, whose repr is the
    # report's summary) when it checks its SIGINT handler; the run must not pay for a report nobody reads.
    cough_project(tmp_path, "quiet", "tests.gc_probe_bot:make_bot")
    modules = _modules_after(
        "run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"
    )
    assert "simulator.engine.runner" in modules  # the run really ran in the probe
    assert "simulator.report.model" not in modules and "numpy" not in modules


def test_run_async_hands_back_the_result_without_formatting_it() -> None:
    from simulator.eventloop import run_async

    formatted: list[str] = []

    class Loud:
        def __repr__(self) -> str:
            formatted.append("repr")
            return "Loud()"

    async def make() -> Loud:
        return Loud()

    assert isinstance(run_async(make()), Loud)
    assert formatted == []
