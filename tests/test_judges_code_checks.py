"""Code checks without an LLM: outcome vs final state and stop reason, assertions (seed 003), text metrics."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from simulator.config.loading import load_scenarios
from simulator.config.scenario import Scenario
from simulator.errors import UserError
from simulator.judging.assertions import AssertionSpec
from simulator.judging.code_checks import code_check_ids, code_verdicts
from simulator.record.models import ConversationRecord, ErrorInfo, StopReason
from simulator.record.transcript import Turn

NOW = datetime(2026, 9, 11, tzinfo=UTC)
# Seed 003's unknown-parcel item: echo the id, say it is not found, never invent a status or a date.
UNKNOWN_PARCEL = AssertionSpec(
    must_contain=["KP-9999", "cannot find|can't find|couldn't find|could not find|no parcel|not found"],
    must_not_contain=["in transit", "expected on", "delivered on"],
    must_not_match=r"\d{4}-\d{2}-\d{2}",
)
# Verbatim replies of seed 003's two bots (examples/parcel_bot.py) to "Where is KP-9999?".
BOT_A = "KP-9999 is in transit, expected on 2026-09-15."
BOT_B = (
    "I'm sorry, I couldn't find any parcel with the number KP-9999. "
    "Could you double-check the number on your shipping confirmation?"
)


def record(
    *bot_turns: list[str] | str,
    stop: StopReason = "user_done",
    state: dict[str, Any] | None = None,
    error: ErrorInfo | None = None,
) -> ConversationRecord:
    turns: list[Turn] = []
    for index, messages in enumerate(bot_turns):
        turns.append(Turn(index=index, role="user", messages=[f"user message {index}"], started_at=NOW))
        texts = [messages] if isinstance(messages, str) else messages
        turns.append(Turn(index=index, role="bot", messages=texts, started_at=NOW))
    return ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason=stop,
        turns=turns,
        final_state=state,
        error=error,
        started_at=NOW,
        ended_at=NOW,
    )


def scenario(**fields: Any) -> Scenario:
    return Scenario(id="s", persona="a person", goal="a goal", **fields)


def by_id(verdicts: list[Any]) -> dict[str, Any]:
    return {v.criterion_id: v for v in verdicts}


def test_outcome_matches_the_final_state_case_insensitively() -> None:
    checks = scenario(expected={"triage_level": "emergency"})
    [passed] = code_verdicts(record("Call 999.", state={"triage_level": "Emergency"}), checks, "h")
    assert (passed.criterion_id, passed.kind, passed.result) == ("outcome.triage_level", "code", "pass")
    assert passed.severity == "critical" and passed.category == "outcome" and passed.judge_set_hash == "h"
    assert passed.evidence[0].quote == "triage_level='Emergency'" and passed.evidence_verified is True
    [failed] = code_verdicts(record("See your GP.", state={"triage_level": "gp"}), checks, "h")
    assert (
        failed.result == "fail"
        and "expected triage_level='emergency', the bot recorded 'gp'" in failed.reasoning
    )


def test_an_outcome_the_bot_never_recorded_is_a_fail() -> None:
    checks = scenario(expected={"triage_level": "urgent"})
    [verdict] = code_verdicts(record("Hmm.", stop="max_turns"), checks, "h")
    assert verdict.result == "fail" and "recorded no triage_level" in verdict.reasoning


def test_handover_and_stop_reason_are_compared_with_the_recorded_stop() -> None:
    checks = scenario(expected={"handover": True, "stop_reason": "handover"})
    verdicts = by_id(code_verdicts(record("Passing you to a nurse.", stop="handover"), checks, "h"))
    assert verdicts["outcome.handover"].result == "pass"
    assert verdicts["outcome.stop_reason"].result == "pass"
    assert [e.quote for e in verdicts["outcome.handover"].evidence] == [
        "stop_reason=handover",
        "Passing you to a nurse.",
    ]
    verdicts = by_id(code_verdicts(record("Bye.", stop="max_turns"), checks, "h"))
    assert verdicts["outcome.handover"].result == "fail"
    assert verdicts["outcome.stop_reason"].result == "fail"
    no_handover = scenario(expected={"handover": False})
    assert code_verdicts(record("Bye.", stop="user_done"), no_handover, "h")[0].result == "pass"


def test_seed_003_unknown_parcel_bot_a_fails_with_the_forbidden_text_as_evidence() -> None:
    [verdict] = code_verdicts(record(BOT_A), scenario(assertions=UNKNOWN_PARCEL), "h")
    assert verdict.criterion_id == "assertions" and verdict.result == "fail"
    assert "missing one of" in verdict.reasoning
    assert 'contains forbidden "in transit"' in verdict.reasoning
    assert "2026-09-15" in verdict.reasoning
    assert [e.quote for e in verdict.evidence] == ["in transit", "expected on", "2026-09-15"]
    assert all(e.found for e in verdict.evidence) and verdict.evidence_verified is True


def test_seed_003_unknown_parcel_bot_b_passes_with_the_required_text_as_evidence() -> None:
    [verdict] = code_verdicts(record(BOT_B), scenario(assertions=UNKNOWN_PARCEL), "h")
    assert verdict.result == "pass"
    assert [e.quote for e in verdict.evidence] == ["KP-9999", "couldn't find"]


def test_assertions_are_case_insensitive_and_quote_the_original_text() -> None:
    spec = AssertionSpec(must_contain=["call 999|ambulance"], must_not_contain=["wait and see"])
    [verdict] = code_verdicts(record("Please CALL 999 now."), scenario(assertions=spec), "h")
    assert verdict.result == "pass" and verdict.evidence[0].quote == "CALL 999"
    [verdict] = code_verdicts(record(["Call 999.", "Or Wait And See."]), scenario(assertions=spec), "h")
    assert verdict.result == "fail" and verdict.evidence[0].quote == "Wait And See"


def test_scope_final_bot_message_ignores_earlier_messages() -> None:
    turns = ("Is it 2026-09-15 today?", ["Thanks.", "Please call 999 now."])
    everywhere = AssertionSpec(must_contain=["999"], must_not_match=r"\d{4}-\d{2}-\d{2}")
    final = everywhere.model_copy(update={"scope": "final_bot_message"})
    assert code_verdicts(record(*turns), scenario(assertions=everywhere), "h")[0].result == "fail"
    [verdict] = code_verdicts(record(*turns), scenario(assertions=final), "h")
    assert verdict.result == "pass" and "final bot message" in verdict.reasoning
    missing = AssertionSpec(must_contain=["Thanks"], scope="final_bot_message")
    assert code_verdicts(record(*turns), scenario(assertions=missing), "h")[0].result == "fail"


def test_text_metrics_are_recorded_against_the_reference_and_gate_nothing() -> None:
    # Seed 003's false pass: an exact readback wrapped in a sentence reaches token F1 0.55.
    reply = "The current status of KP-1005 is: out for delivery."
    verdicts = by_id(code_verdicts(record(reply), scenario(reference="out for delivery"), "h"))
    assert set(verdicts) == {
        "metric.exact_match",
        "metric.token_f1",
        "metric.rouge_l",
        "metric.difflib_ratio",
    }
    assert all(v.kind == "metric" and v.result == "not_applicable" for v in verdicts.values())
    assert verdicts["metric.exact_match"].score == 0.0
    assert verdicts["metric.token_f1"].score == pytest.approx(0.545454, abs=1e-5)
    assert verdicts["metric.rouge_l"].score == pytest.approx(0.545454, abs=1e-5)
    assert 0 < verdicts["metric.difflib_ratio"].score < 1
    same = by_id(code_verdicts(record("Out for delivery!"), scenario(reference="out for delivery"), "h"))
    assert same["metric.exact_match"].score == 1.0 and same["metric.token_f1"].score == 1.0


def test_an_errored_conversation_gets_not_judged_checks_with_the_cause() -> None:
    checks = scenario(expected={"triage_level": "gp"}, assertions=UNKNOWN_PARCEL, reference="x")
    error = ErrorInfo(source="bot", kind="bot_exception", message="the bot fell over")
    verdicts = code_verdicts(record("Hello", stop="error", error=error), checks, "h")
    assert [v.criterion_id for v in verdicts] == code_check_ids(checks)
    assert {v.result for v in verdicts} == {"not_judged"}
    assert "the bot fell over" in verdicts[0].reasoning
    assert by_id(verdicts)["metric.token_f1"].kind == "metric"


def test_scenario_assertions_are_validated_with_file_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        textwrap.dedent(
            """
            id: parcel
            persona: a customer
            goal: find a parcel
            assertions:
              must_contain: [KP-9999, "cannot find|"]
              must_not_match: "(unclosed"
              scop: final_bot_message
            """
        )
    )
    with pytest.raises(UserError) as caught:
        load_scenarios([tmp_path])
    problems = {p.field: p for p in caught.value.problems}
    assert (
        problems["assertions.must_contain"].line == 6
        and "empty phrase" in problems["assertions.must_contain"].message
    )
    assert problems["assertions.must_not_match"].line == 7
    assert (
        problems["assertions.scop"].line == 8
        and "did you mean 'scope'" in problems["assertions.scop"].message
    )
    (tmp_path / "s.yaml").write_text("id: parcel\npersona: p\ngoal: g\nassertions: {must_contain: KP-9999}\n")
    [loaded] = load_scenarios([tmp_path])
    assert loaded.assertions == AssertionSpec(must_contain=["KP-9999"])
