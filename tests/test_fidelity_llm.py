"""The LLM user's provenance and fidelity audit through the fake LLM server and the real openai SDK."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from simulator.analysis.rundata import load_run
from simulator.config.factors import suite_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord, Verdict
from simulator.report.model import build_report
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests._reliability_fixtures import triage_responder, write_suite
from tests.fake_audit import audit_reply, is_audit_call

SCENARIOS = """
- id: chest
  persona: 52-year-old man, short messages, downplays symptoms.
  goal: Find out whether he should see someone about chest pressure.
  facts: [Pressure in the chest for two hours., The pain goes to the left arm., He is 52.]
  key_facts: [2]
  expected: {triage_level: emergency}
  max_turns: 6
"""


def user_lines(call: FakeCall) -> str:
    """The simulated user: its goal, the first fact when asked, the second fact plus a planted invented
    one, then [END]."""
    facts = re.findall(r"^- (.*)$", (call.system or "").split("Facts you know:", 1)[-1], re.M)
    said = sum(1 for m in call.messages if m.role == "assistant")
    return [
        "hi, is chest pressure something to worry about?",
        facts[0],
        f"{facts[1]} and my cat is sick too",
        "[END]",
    ][min(said, 3)]


def responder(mode: str) -> Any:
    def answer(call: FakeCall) -> FakeReply | str:
        if is_audit_call(call):
            if mode == "invalid":
                return FakeReply(text="I think the user was fine.")
            return audit_reply(call, invented=["my cat"])
        if call.tools or call.schema is not None:
            return triage_responder(call)
        return user_lines(call)

    return answer


def _run(tmp_path: Path, mode: str) -> tuple[ConversationRecord, list[Verdict], FakeLLMServer]:
    async def go() -> FakeLLMServer:
        async with FakeLLMServer(responder(mode)) as server:
            path = write_suite(
                tmp_path / "suite", server.openai_base_url, runs=1, user="openai:fake-user",
                scenarios=SCENARIOS, criteria=1,
            )  # fmt: skip
            suite = load_suite(path)
            await run_suite(suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False))
            return server

    server = asyncio.run(go())
    folder = RunFolder.open(tmp_path / "run")
    record = next(iter(folder.conversations()))
    return record, [v for v in folder.verdicts() if v.kind == "fidelity"], server


def test_llm_user_provenance_and_checks_come_from_one_audit_call(tmp_path: Path) -> None:
    record, fidelity, server = _run(tmp_path, "good")
    audits = [c for c in server.calls if is_audit_call(c)]
    assert len(audits) == 1 and audits[0].schema is not None
    by_fact = {p.fact: p for p in record.provenance}
    assert [by_fact[i].status for i in range(3)] == ["elicited", "elicited", "missed"]
    for i in (0, 1):
        p = by_fact[i]
        assert p.source == "llm" and p.verified is True
        assert record.turns[p.user_turn].role == "user" and record.turns[p.asked_turn].role == "bot"
        assert p.asked_turn < p.user_turn and p.question and p.question.endswith("?")
    assert by_fact[1].key and not by_fact[0].key  # key_facts are numbered from 1
    results = {v.criterion_id: v for v in fidelity}
    assert set(results) == {
        "fidelity.invented_facts", "fidelity.early_reveal", "fidelity.premature_end",
        "fidelity.role_confusion", "fidelity.drift",
    }  # fmt: skip
    invented = results["fidelity.invented_facts"]
    assert invented.result == "fail" and invented.evidence_verified is True
    assert "my cat is sick" in invented.evidence[0].quote
    assert invented.judge_model == "openai:fake-judge" and invented.usage is not None
    assert results["fidelity.early_reveal"].result == "pass"  # nothing volunteered
    # The bot closed the conversation with its decision: the user did not end it.
    assert record.stop_reason == "bot_closed" and results["fidelity.premature_end"].result == "not_applicable"
    section = build_report(load_run(tmp_path / "run")).simulated_user
    assert section is not None and section.faulted.k == 1
    assert section.provenance_overall is not None and section.provenance_overall.missed == 1
    assert record.usage_by_role["audit"].calls == 1
    cost = build_report(load_run(tmp_path / "run")).cost
    judge = next(role for role in cost.roles if role.role == "judge")
    judged = [v for v in RunFolder.open(tmp_path / "run").verdicts() if v.kind == "llm"]
    assert judge.calls == len(judged) + 1  # the audit call is costed with the judges
    assert (
        judge.input_tokens
        == sum(v.usage.input_tokens for v in judged if v.usage) + record.usage_by_role["audit"].input_tokens
    )


def test_an_audit_that_never_answers_validly_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    record, fidelity, server = _run(tmp_path, "invalid")
    assert len([c for c in server.calls if is_audit_call(c)]) == 2  # one corrective retry
    results = {v.criterion_id: v for v in fidelity}
    for check in ("fidelity.invented_facts", "fidelity.role_confusion", "fidelity.drift"):
        assert results[check].result == "error" and results[check].error is not None
    # Provenance falls back to code (word overlap), so early reveal is still judged.
    assert {p.source for p in record.provenance} == {"code"}
    assert [p.status for p in record.provenance] == ["elicited", "elicited", "missed"]
    assert results["fidelity.early_reveal"].result == "pass"
