"""The simulated-user audit end to end with a real small model (local:smollm2): an LLM user, the example
triage bot, and the audit by the same local model. Assert on the engine, not on the model's wisdom."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.report.model import build_report

pytestmark = pytest.mark.real_llm

ROOT = Path(__file__).resolve().parent.parent


def test_llm_user_audit_with_smollm2(tmp_path: Path) -> None:
    suite = load_suite(
        ROOT / "scenarios" / "triage" / "suite.yaml",
        {
            "runs": 1,
            "user": {
                "model": "local:smollm2",
                "max_tokens": 40,
                # 150: the checks and the report section are what is tested; at 400 both audit calls ran to the
                # cap anyway (a 135M model rambles), a minute of generation on a busy 2-core machine.
                "fidelity": {"model": "local:smollm2", "max_tokens": 150},
            },
            "scenarios": {"paths": ["chest-pain-vague-01.yaml"]},
        },
    )
    scenarios = suite.scenarios_to_run()
    for scenario in scenarios:
        scenario.max_turns = 2  # short: llama.cpp's prompt processing dominates on a busy 2-core machine
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "run", progress=False)))
    folder = RunFolder.open(tmp_path / "run")
    [record] = list(folder.conversations())
    fidelity = [v for v in folder.verdicts() if v.kind == "fidelity"]
    assert {v.criterion_id for v in fidelity} == {
        "fidelity.invented_facts", "fidelity.early_reveal", "fidelity.premature_end",
        "fidelity.role_confusion", "fidelity.drift",
    }  # fmt: skip
    if record.stop_reason != "error":
        assert len(record.provenance) == 6 and {p.source for p in record.provenance} <= {"llm", "code"}
        assert record.usage_by_role["audit"].calls >= 1  # the audit really called the model
        reading = next(v for v in fidelity if v.criterion_id == "fidelity.drift")
        assert reading.result in ("pass", "fail", "not_applicable", "error")
        if reading.result != "error":
            assert reading.judge_model == "local:smollm2"
    section = build_report(load_run(tmp_path / "run")).simulated_user
    assert section is not None and len(section.checks) == 5
