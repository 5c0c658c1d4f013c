"""The shipped triage demo, run offline: deterministic, and it shows the example bot's documented flaw."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from simulator.runner import RunOptions, run_suite
from simulator.runs import RunFolder
from simulator.scenario import load_scenarios
from simulator.suite import load_suite

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
