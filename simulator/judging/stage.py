"""The judging stage the runner calls for each finished conversation (code checks now; LLM criteria later)."""

from __future__ import annotations

__all__ = ["JudgeStage", "make_judge_stage"]

from datetime import UTC, datetime
from typing import Any

from simulator.llm import ModelHub
from simulator.records import ConversationRecord, Evidence, Verdict
from simulator.runs import sha256_text
from simulator.scenario import Scenario
from simulator.suite import Suite

STOP_KEYS = {"handover": "handover", "closed": "bot_closed"}


def outcome_verdicts(record: ConversationRecord, scenario: Scenario, judge_set_hash: str) -> list[Verdict]:
    """Each `expected` key compared in code with the bot's final state or the recorded stop reason."""
    verdicts = []
    for key, expected in scenario.expected.items():
        criterion = f"outcome.{key}"
        base = {
            "conversation_id": record.id,
            "scenario_id": record.scenario_id,
            "repeat": record.repeat,
            "criterion_id": criterion,
            "kind": "code",
            "judge_set_hash": judge_set_hash,
            "judged_at": datetime.now(UTC),
            "category": "outcome",
            "severity": "critical",
        }
        if record.stop_reason == "error":
            verdicts.append(Verdict(**base, result="error", reasoning="the conversation ended in an error"))
            continue
        if key in STOP_KEYS:
            actual: Any = record.stop_reason == STOP_KEYS[key]
        elif key == "stop_reason":
            actual = record.stop_reason
        elif record.final_state is None or key not in record.final_state:
            verdicts.append(
                Verdict(
                    **base,
                    result="fail",
                    evidence_verified=True,
                    reasoning=f"expected {key}={expected!r}; the bot recorded no {key}",
                )
            )
            continue
        else:
            actual = record.final_state[key]
        passed = actual == expected
        verdicts.append(
            Verdict(
                **base,
                result="pass" if passed else "fail",
                evidence_verified=True,
                reasoning=f"expected {key}={expected!r}, got {actual!r}",
                evidence=[Evidence(quote=f"{key}={actual!r}", found=True)],
            )
        )
    return verdicts


class JudgeStage:
    def __init__(self, judge_set_hash: str) -> None:
        self.judge_set_hash = judge_set_hash

    def describe(self) -> dict[str, Any]:
        return {"manifest": {"judge_set_hash": self.judge_set_hash, "model": None, "criteria": []}}

    def pending(self, record: ConversationRecord, judged: set[tuple[str, str]]) -> bool:
        return not any(conversation_id == record.id for conversation_id, _ in judged)

    async def judge(
        self, record: ConversationRecord, scenario: Scenario, judged: set[tuple[str, str]]
    ) -> list[Verdict]:
        return [
            v
            for v in outcome_verdicts(record, scenario, self.judge_set_hash)
            if (v.conversation_id, v.criterion_id) not in judged
        ]


def make_judge_stage(suite: Suite, scenarios: list[Scenario], hub: ModelHub) -> JudgeStage:
    return JudgeStage(sha256_text("outcome-checks-v1"))
