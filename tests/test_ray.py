"""The Ray backend on a real local Ray: the same records as a local run, a killed worker that resume
recovers from, and a run-wide request budget that holds across workers."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.config.loading import load_scenarios
from simulator.config.suite import Suite, load_suite
from simulator.engine.ray_backend import RayBackendOptions
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.testing import FakeLLMServer
from simulator.testing.fake_llm import FakeCall, FakeReply, default_responder

ROOT = Path(__file__).resolve().parent.parent


def _ray() -> object:
    try:
        import ray
    except ImportError:
        if os.environ.get("SIMULATOR_REQUIRE_ALL") == "1":
            pytest.fail('Ray is required here (SIMULATOR_REQUIRE_ALL=1): pip install -e ".[ray]"')
        pytest.skip('Ray is not installed; enable these tests with: pip install -e ".[ray]"')
    return ray


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    ray = _ray()
    ray.init(  # type: ignore[attr-defined]
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        },
    )
    yield ray
    ray.shutdown()  # type: ignore[attr-defined]


def _triage(runs: int = 2) -> tuple[Suite, list]:  # type: ignore[type-arg]
    suite = load_suite(ROOT / "scenarios" / "triage" / "suite.yaml", {"runs": runs})
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths], ["cardiac", "skin", "msk"])
    return suite, scenarios


def _records(run: Path) -> dict[str, tuple[str, object]]:
    return {r.id: (r.stop_reason, r.final_state) for r in RunFolder.open(run).conversations()}


def _verdicts(run: Path) -> list[tuple[str, str, str]]:
    return sorted((v.conversation_id, v.criterion_id, v.result) for v in RunFolder.open(run).verdicts())


def test_the_ray_backend_writes_the_records_a_local_run_writes(ray_cluster: object, tmp_path: Path) -> None:
    suite, scenarios = _triage()
    local = asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "local", progress=False)))
    options = RunOptions(out=tmp_path / "ray", progress=False, backend=RayBackendOptions(workers=2))
    remote = asyncio.run(run_suite(suite, scenarios, options))
    assert remote.status == local.status == "complete"
    assert _records(tmp_path / "ray") == _records(tmp_path / "local")
    assert _verdicts(tmp_path / "ray") == _verdicts(tmp_path / "local")
    ids = [r.bot_conversation_id for r in RunFolder.open(tmp_path / "ray").conversations()]
    assert len(set(ids)) == len(ids) == 18


def test_a_killed_worker_loses_only_its_items_and_resume_finishes(
    ray_cluster: object, tmp_path: Path
) -> None:
    ray = ray_cluster
    suite, scenarios = _triage(runs=4)
    slow = suite.bot.model_copy(update={"factory": "tests.slow_bot:make_bot"})  # 50 ms a reply
    suite = suite.model_copy(update={"bot": slow, "concurrency": 4})
    suite._base_dir, suite._file = (
        (ROOT / "scenarios" / "triage").resolve(),
        ROOT / "scenarios" / "triage" / "suite.yaml",
    )
    out = tmp_path / "run"

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = len(list(RunFolder.open(out).conversations())) if (out / "manifest.json").exists() else 0
            if done >= 6:
                name = f"simulator-{out.name}-0"
                ray.kill(ray.get_actor(name))  # type: ignore[attr-defined]
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one)
    killer.start()
    options = RunOptions(out=out, progress=False, backend=RayBackendOptions(workers=2))
    first = asyncio.run(run_suite(suite, scenarios, options))
    killer.join()
    assert first.lost > 0 and first.status == "interrupted"
    recorded = _records(out)
    assert 6 <= len(recorded) < 36
    resumed = asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, resume=True, progress=False)))
    assert resumed.status == "complete"
    ids = [r.id for r in RunFolder.open(out).conversations()]
    assert len(ids) == len(set(ids)) == 36  # one record per item, nothing twice


def test_the_request_budget_holds_across_workers(ray_cluster: object, tmp_path: Path) -> None:
    arrivals: list[float] = []

    def responder(call: FakeCall) -> FakeReply:
        arrivals.append(time.monotonic())
        return default_responder(call)

    with FakeLLMServer(responder) as server:
        suite, scenarios = _triage(runs=1)
        data = suite.model_dump()
        data["bot"] = {"type": "chat", "model": "openai:fake", "system_prompt": "You triage."}
        data["providers"] = {
            "openai": {"base_url": server.openai_base_url, "rpm": 300, "max_connections": 32}
        }
        data["concurrency"] = 16
        suite = Suite.model_validate(data)
        suite._base_dir = (ROOT / "scenarios" / "triage").resolve()
        for scenario in scenarios:
            scenario.max_turns = 3
        options = RunOptions(out=tmp_path / "run", progress=False, backend=RayBackendOptions(workers=2))
        result = asyncio.run(run_suite(suite, scenarios, options))
    assert result.status == "complete" and len(arrivals) >= 20
    # 300 a minute is 5 a second for the whole run (2.5 per worker), plus each worker's small burst.
    span = arrivals[-1] - arrivals[0]
    assert len(arrivals) <= 5 * span + 2 * 3 + 1
    calls = RunFolder.open(tmp_path / "run").read_manifest().total_calls()["openai"]
    assert calls.attempts == len(arrivals)
