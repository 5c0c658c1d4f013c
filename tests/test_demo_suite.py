"""The shipped triage demo, run offline: deterministic, and it shows the example bot's documented flaw."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder

SUITE = Path(__file__).resolve().parent.parent / "scenarios" / "triage" / "suite.yaml"


def run_demo(out: Path) -> tuple[list, list]:
    suite = load_suite(SUITE)
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, progress=False)))
    folder = RunFolder.open(out)
    return list(folder.conversations()), list(folder.verdicts())


def test_demo_runs_offline_and_finds_the_chest_pain_under_triage(tmp_path: Path) -> None:
    conversations, verdicts = run_demo(tmp_path / "a")
    scenarios = load_scenarios([SUITE.parent])
    assert len(conversations) == len(scenarios) * 3
    assert Counter(c.stop_reason for c in conversations) == {"user_done": len(conversations)}
    outcome = [v for v in verdicts if v.criterion_id == "outcome.triage_level"]
    failed = sorted({v.scenario_id for v in outcome if v.result == "fail"})
    assert failed == ["chest-pain-vague-01"]  # the flaw documented in examples/triage_bot.py
    wrong = next(c for c in conversations if c.scenario_id == "chest-pain-vague-01")
    assert wrong.final_state is not None and wrong.final_state["triage_level"] == "urgent"


def test_demo_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    first, _ = run_demo(tmp_path / "a")
    second, _ = run_demo(tmp_path / "b")

    def transcript(records: list) -> dict[str, list[str]]:
        return {r.id: [m for t in r.turns for m in t.messages] for r in records}

    assert transcript(first) == transcript(second)


def test_demo_over_http_reaches_the_same_outcomes(tmp_path: Path, monkeypatch) -> None:
    from examples.http_triage_bot import serve_in_thread

    _, python_verdicts = run_demo(tmp_path / "python")
    url, shutdown = serve_in_thread(token="demo-token")
    monkeypatch.setenv("DEMO_BOT_TOKEN", "demo-token")
    try:
        suite = load_suite(
            SUITE,
            {"bot": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${DEMO_BOT_TOKEN}"}}},
        )
        scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
        asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "http", progress=False)))
    finally:
        shutdown()
    folder = RunFolder.open(tmp_path / "http")
    http_verdicts = list(folder.verdicts())

    def outcomes(verdicts: list) -> dict[str, str]:
        return {v.conversation_id: v.result for v in verdicts if v.criterion_id == "outcome.triage_level"}

    assert outcomes(http_verdicts) == outcomes(python_verdicts)
    assert "demo-token" not in (tmp_path / "http" / "manifest.json").read_text()
    assert {c.stop_reason for c in folder.conversations()} <= {"bot_closed", "user_done"}
