"""How a verdict was decided is a field (`Verdict.decided_by`) set where it is decided, read from the field
(never from the reasoning text), and derivable from an old record's structure (record/decided.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.analysis.cost import cost_latency, load_prices
from simulator.analysis.rundata import load_run
from simulator.judging.aggregate import combine_verdicts
from simulator.judging.code_checks import code_verdicts
from simulator.judging.fidelity import FidelityAuditor
from simulator.record.decided import decided_by_of
from simulator.record.models import Verdict
from simulator.testing.fake_judges import ScriptedJudge
from simulator.testing.fake_llm import FakeLLMServer
from simulator.testing.fake_llm_behaviour import FaultConfig
from tests.test_judge_points_applies import (
    ESCALATES,
    NOTES_ALLERGY,
    SCENARIO,
    conversation,
    judge_key,  # noqa: F401 (the fake judge's key, an autouse fixture)
    make_stage,
)
from tests.test_report_support import record, verdict, write_run


def _old(v: Verdict) -> dict[str, object]:
    """The verdict as a record written before the field existed."""
    return v.model_dump(mode="json", exclude={"decided_by"})


async def test_the_stage_marks_llm_and_applies_when_verdicts() -> None:
    async with FakeLLMServer(ScriptedJudge(lambda call: "met")) as server:
        verdicts = await make_stage(server, [ESCALATES, NOTES_ALLERGY]).judge(conversation(), SCENARIO, set())
    by_id = {v.criterion_id: v for v in verdicts}
    assert by_id["escalates"].decided_by == "llm" and by_id["outcome.triage_level"].decided_by == "code"
    assert by_id["asks-allergy"].decided_by == "applies_when"
    assert all(decided_by_of(_old(v)) == v.decided_by for v in verdicts)


async def test_a_failed_judge_call_is_still_decided_by_the_llm() -> None:
    async with FakeLLMServer(ScriptedJudge(lambda call: "met"), faults=FaultConfig(error_500=1.0)) as server:
        verdicts = await make_stage(server, [ESCALATES]).judge(conversation(), SCENARIO, set())
    (judged,) = [v for v in verdicts if v.criterion_id == "escalates"]
    assert judged.result == "error" and judged.decided_by == "llm"
    assert decided_by_of(_old(judged)) == "llm"


def test_code_checks_jury_and_not_judged() -> None:
    checks = code_verdicts(conversation(), SCENARIO, "sha256:t")
    assert checks and {v.decided_by for v in checks} == {"code"}
    errored = code_verdicts(conversation(stop="error"), SCENARIO, "sha256:t")
    assert errored and {(v.result, v.decided_by) for v in errored} == {("not_judged", None)}
    rec = record("s")
    parts = {
        "a": [verdict(rec, "c", "pass", decided_by="llm", sample=0)],
        "b": [verdict(rec, "c", "fail", decided_by="llm", sample=0)],
    }
    combined = combine_verdicts(parts, "any_fail", "jury")
    assert combined.decided_by == "jury" and combined.result == "fail"
    for v in [*checks, *errored, combined]:
        assert decided_by_of(_old(v)) == v.decided_by


def test_offline_fidelity_checks_are_decided_in_code() -> None:
    auditor = FidelityAuditor()
    rec = conversation()
    for v in (auditor.role_in_code(rec), auditor.drift_in_code(rec, SCENARIO), auditor.premature_end(rec)):
        assert v.decided_by == "code" and decided_by_of(_old(v)) == "code"


@pytest.mark.parametrize(
    ("decided_by", "reasoning", "calls"),
    [
        ("applies_when", "the criterion does not apply here", 0),
        ("llm", "applies_when.tags_any: text that only looks like the rule", 1),
        ("llm", "the judge said so", 1),
    ],
)
def test_cost_counts_judge_calls_from_the_field_not_the_prose(
    tmp_path: Path, decided_by: str, reasoning: str, calls: int
) -> None:
    rec = record("s")
    result = "not_applicable" if decided_by == "applies_when" else "pass"
    judged = verdict(rec, "c", result, decided_by=decided_by, reasoning=reasoning, judge_model=None)
    run = load_run(write_run(tmp_path / "run", [rec], [judged]))
    judge = next(r for r in cost_latency(run, load_prices()).roles if r.role == "judge")
    assert judge.calls == calls
