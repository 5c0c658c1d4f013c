"""Fault injection: with 20% 500s, 10% 429s and some timeouts, a suite loses nothing, duplicates nothing,
and finds exactly what a clean run with the same seed finds."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeLLMServer, FaultConfig
from tests._reliability_fixtures import (
    FIDELITY,
    conversation_ids,
    outcome,
    triage_responder,
    verdict_keys,
    write_suite,
)

FAULTS = FaultConfig(error_500=0.2, error_429=0.1, timeout=0.04, retry_after_s=0.01, timeout_s=5.0)
RUNS = 5


async def _run(folder: Path, server: FakeLLMServer, user: str, **provider: float) -> Path:
    path = write_suite(folder, server.openai_base_url, runs=RUNS, user=user, provider=provider, criteria=2)
    suite = load_suite(path)
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    out = folder / "run"
    await run_suite(suite, scenarios, RunOptions(out=out, progress=False))
    return out


@pytest.mark.parametrize(
    ("user", "fails"),
    [("offline", 0), ("openai:fake-user", RUNS)],  # the LLM user never mentions the arm: chest fails
)
async def test_faults_lose_nothing_duplicate_nothing_and_match_a_clean_run(
    tmp_path: Path, user: str, fails: int
) -> None:
    async with FakeLLMServer(triage_responder) as server:
        clean = await _run(tmp_path / "clean", server, user)
        needed = len(server.calls)
    async with FakeLLMServer(triage_responder, faults=FAULTS, seed=11) as server:
        faulty = await _run(tmp_path / "faulty", server, user, max_attempts=12, timeout_s=0.5)
        attempts = len(server.calls)

    expected = sorted(f"{s}#{r}" for s in ("chest", "rash", "cough") for r in range(RUNS))
    for run in (clean, faulty):
        assert sorted(conversation_ids(run)) == expected  # every item once
        assert Counter(verdict_keys(run)) == Counter(
            (i, c) for i in expected for c in ("outcome.triage_level", "rule-0", "rule-1", *FIDELITY)
        )  # every judgement once
    calls = RunFolder(faulty).read_manifest().total_calls()["openai"].model_dump()
    assert calls["rate_limits"] > 0 and calls["transient_errors"] > 0  # the faults did happen
    assert calls["attempts"] == attempts
    assert calls["retries"] == attempts - needed  # every extra request was a retry: no work done twice
    assert calls["failed"] == 0  # 12 attempts: every call got through in the end
    found = {
        name: outcome(RunFolder(run).conversations(), RunFolder(run).verdicts())
        for name, run in (("clean", clean), ("faulty", faulty))
    }
    assert found["faulty"] == found["clean"]
    assert {v["stop"] for v in found["clean"].values()} == {"bot_closed"}
    results = Counter(v["verdicts"]["outcome.triage_level"] for v in found["clean"].values())
    assert {v["verdicts"]["rule-0"] for v in found["clean"].values()} == {"pass"}  # the LLM judges ran
    assert (results["pass"], results["fail"], sum(results.values())) == (3 * RUNS - fails, fails, 3 * RUNS)
