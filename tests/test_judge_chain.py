"""The calls after a conversation: the fidelity audit beside the judges (unless it may discard the
conversation), and the first criterion judged alone only where the provider caches prompts on request.

Through the fake LLM server and the real SDKs; the responder holds one call open until another arrives (or
a second passes), so what is asserted is which calls were in flight together, never how long anything took.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.config.factors import suite_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests._reliability_fixtures import triage_responder, write_suite
from tests.fake_audit import audit_reply, is_audit_call

HOLD_S = 1.0  # how long a held call waits for the call it expects beside it


def _is_judge(call: FakeCall) -> bool:
    return call.schema is not None and not is_audit_call(call)


class Watch:
    """A responder that notes, for the first call of one kind, whether a call of another kind arrived while
    it was held open."""

    def __init__(self, held: Any, expected: Any) -> None:
        self.held, self.expected = held, expected
        self.arrived = asyncio.Event()
        self.overlapped: bool | None = None
        self.judge_calls: list[FakeCall] = []

    async def __call__(self, call: FakeCall) -> FakeReply | str:
        if self.expected(call):
            self.arrived.set()
        answer = audit_reply(call) if is_audit_call(call) else triage_responder(call)
        if self.held(call) and self.overlapped is None:
            self.overlapped = False
            try:
                await asyncio.wait_for(self.arrived.wait(), HOLD_S)
                self.overlapped = True
            except TimeoutError:
                pass
        return answer


def _run(tmp_path: Path, watch: Watch, *, user: str, criteria: int, edit: Any = None) -> RunFolder:
    async def go() -> None:
        async with FakeLLMServer(watch) as server:
            path = write_suite(
                tmp_path / "suite", server.openai_base_url, runs=1, user=user, criteria=criteria
            )
            suite_doc = json.loads(path.read_text(encoding="utf-8"))
            suite_doc["scenarios"]["paths"] = ["one.yaml"]
            (path.parent / "one.yaml").write_text(
                "- id: one\n  persona: A person.\n  goal: Ask about a cough.\n  facts: [It started today.]\n"
                "  max_turns: 4\n",
                encoding="utf-8",
            )
            if edit is not None:
                edit(suite_doc, server)
            path.write_text(json.dumps(suite_doc), encoding="utf-8")
            suite = load_suite(path)
            await run_suite(suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False))

    asyncio.run(go())
    return RunFolder.open(tmp_path / "run")


@pytest.mark.parametrize("criteria", [1, 3])
def test_the_audit_runs_beside_the_judges(tmp_path: Path, criteria: int) -> None:
    watch = Watch(held=is_audit_call, expected=_is_judge)
    folder = _run(tmp_path, watch, user="openai:fake-user", criteria=criteria)
    assert watch.overlapped is True  # a judge call arrived while the audit was unanswered
    record = next(iter(folder.conversations()))
    verdicts = list(folder.verdicts())
    assert record.usage_by_role["audit"].calls == 1 and record.provenance  # the audit's part is kept
    assert sum(v.kind == "fidelity" for v in verdicts) == 5
    assert sorted(v.criterion_id for v in verdicts if v.kind == "llm") == [
        f"rule-{i}" for i in range(criteria)
    ]


def test_an_audit_that_may_discard_the_conversation_comes_before_the_judges(tmp_path: Path) -> None:
    def regenerate(doc: dict[str, Any], server: FakeLLMServer) -> None:
        doc["user"]["fidelity"] = {"on_fail": "regenerate"}

    watch = Watch(held=is_audit_call, expected=_is_judge)
    folder = _run(tmp_path, watch, user="openai:fake-user", criteria=2, edit=regenerate)
    assert watch.overlapped is False  # no judge call until the audit had answered
    assert sum(v.kind == "llm" for v in folder.verdicts()) == 2


def _anthropic_judges(doc: dict[str, Any], server: FakeLLMServer) -> None:
    doc["judges"]["model"] = "anthropic:fake-judge"
    doc["providers"]["anthropic"] = {"base_url": server.base_url, "timeout_s": 5}


@pytest.mark.parametrize(
    ("edit", "alone"), [(None, False), (_anthropic_judges, True)], ids=["openai", "anthropic"]
)
def test_the_first_criterion_goes_alone_only_where_the_provider_caches_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Any, alone: bool
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    watch = Watch(held=_is_judge, expected=lambda call: _is_judge(call) and watch.overlapped is not None)
    folder = _run(tmp_path, watch, user="offline", criteria=3, edit=edit)
    assert watch.overlapped is (not alone)
    judged = [v for v in folder.verdicts() if v.kind == "llm"]
    assert sorted(v.criterion_id for v in judged) == ["rule-0", "rule-1", "rule-2"]
    assert {v.judge_model for v in judged} == {"anthropic:fake-judge" if alone else "openai:fake-judge"}
