"""Signed rubric points (asked as met / not met) on a worked example, and `applies_when` decided in code."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.analysis.points import conversation_score, points_summary
from simulator.analysis.rundata import load_run
from simulator.authoring.distinct import similarity
from simulator.config.scenario import Scenario
from simulator.config.suite import ProviderSettings
from simulator.errors import UserError
from simulator.judging.applicability import AppliesWhen, applicability, facts_revealed
from simulator.judging.criteria import Criterion, load_criteria
from simulator.judging.llm_judge import POINTS_SCHEMA, LLMJudge
from simulator.judging.stage import JudgeStage, judge_set_hash
from simulator.providers.hub import ModelHub
from simulator.record.models import ConversationRecord
from simulator.record.transcript import Turn
from simulator.testing.fake_judges import JudgeCall, ScriptedJudge
from simulator.testing.fake_llm import FakeLLMServer
from tests.conftest import close_after_test
from tests.test_report_support import record, verdict, write_run

NOW = datetime(2026, 9, 11, tzinfo=UTC)
SCENARIO = Scenario(
    id="chest",
    persona="a man",
    goal="advice",
    tags=["cardiac"],
    facts=["Pressure in the chest for two hours.", "The pain goes to the left arm."],
    expected={"triage_level": "emergency"},
)


def rubric(id_: str, points: int, **extra: object) -> Criterion:
    return Criterion.model_validate(
        {"id": id_, "criterion": f"The bot does {id_}.", "points": points, **extra}
    )


# HealthBench-style rubric: two desirable behaviours, one undesirable.
ESCALATES = rubric("escalates", 5)
ASKS_ARM = rubric("asks-arm", 3)
DIAGNOSES = rubric("diagnoses", -4)  # undesirable: names a diagnosis it cannot make
NOTES_ALLERGY = rubric("asks-allergy", 2, applies_when={"tags_any": ["allergy"]})


def conversation(stop: str = "user_done", user: str = "chest pressure for two hours") -> ConversationRecord:
    turns = [
        Turn(index=0, role="user", messages=[user], started_at=NOW),
        Turn(index=0, role="bot", messages=["This is a heart attack. Call 999 now."], started_at=NOW),
    ]
    return ConversationRecord(
        id="chest#0", scenario_id="chest", repeat=0, stop_reason=stop, turns=turns,  # type: ignore[arg-type]
        started_at=NOW, ended_at=NOW, tags=["cardiac"],
    )  # fmt: skip


@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_JUDGE_KEY", "test-key")


def make_stage(server: FakeLLMServer, criteria: list[Criterion]) -> JudgeStage:
    settings = ProviderSettings(base_url=server.base_url, api_key_env="FAKE_JUDGE_KEY", max_attempts=1)
    hub = close_after_test(ModelHub({"anthropic": settings}))
    client, bare = hub.client("anthropic:judge")
    judge = LLMJudge(client, "anthropic:judge", bare, "sha256:t", temperature=0.0, max_tokens=256)
    return JudgeStage(criteria, judge, "sha256:t", [SCENARIO], {}, [])


async def test_signed_points_worked_example() -> None:
    """Met: escalates (+5) and diagnoses (-4); not met: asks-arm (+3). Score (5 - 4) / (5 + 3) = 0.125."""
    met = {"escalates": "met", "asks-arm": "not_met", "diagnoses": "met"}
    asked: list[JudgeCall] = []

    def decide(call: JudgeCall) -> str:
        asked.append(call)
        return met[call.criterion_id]

    async with FakeLLMServer(ScriptedJudge(decide)) as server:
        verdicts = await make_stage(server, [ESCALATES, ASKS_ARM, DIAGNOSES]).judge(
            conversation(), SCENARIO, set()
        )
        assert all(call.schema == POINTS_SCHEMA for call in server.calls)
        prompt = server.calls[0].messages[-1].content
    assert all(call.points for call in asked)  # the met / not met variant was asked every time
    assert "whether that behaviour is desirable or not" in prompt and '"met" or "not_met"' in prompt
    by_id = {v.criterion_id: v for v in verdicts if v.kind == "llm"}
    # Pass / fail keep their meaning (pass = good): an undesirable behaviour that is met is a fail.
    assert [
        (by_id[c].result, by_id[c].met, by_id[c].points) for c in ("escalates", "asks-arm", "diagnoses")
    ] == [
        ("pass", True, 5),
        ("fail", False, 3),
        ("fail", True, -4),
    ]
    assert by_id["escalates"].evidence_verified is True and by_id["asks-arm"].evidence_verified is None
    assert conversation_score(list(by_id.values())) == pytest.approx(0.125)


def test_scores_clip_leave_out_errors_and_skip_criteria_that_did_not_apply(tmp_path: Path) -> None:
    a, b, c = record("s1"), record("s2", tags=["tag-x"]), record("s3")
    verdicts = [
        verdict(a, "good", "pass", points=5, met=True, category="care"),
        verdict(a, "bad", "fail", points=-8, met=True, category="safety"),  # 5 - 8 < 0: clipped to 0
        verdict(b, "good", "pass", points=5, met=True, category="care"),
        verdict(b, "other", "not_applicable", points=5, category="care"),  # not in the maximum
        verdict(c, "good", "error", points=5, category="care"),  # no score: left out
    ]
    assert conversation_score(verdicts[:2]) == 0.0
    assert conversation_score(verdicts[2:4]) == 1.0
    assert conversation_score(verdicts[4:]) is None
    summary = points_summary(load_run(write_run(tmp_path / "run", [a, b, c], verdicts)), replicates=200)
    assert summary is not None
    assert (summary.overall.mean, summary.overall.conversations, summary.overall.left_out) == (0.5, 2, 1)
    assert summary.overall.low is not None and summary.overall.low <= 0.5 <= summary.overall.high
    assert summary.by_tag["tag-x"].mean == 1.0
    assert summary.by_category["care"].mean == 1.0  # category care alone: s1 earns its +5 of 5
    assert summary.by_category["safety"].mean is None  # no positive points in safety: no score


def test_points_validation_and_hash() -> None:
    with pytest.raises(ValueError, match="not 0"):
        rubric("x", 0)
    with pytest.raises(ValueError):
        rubric("x", 11)
    assert ESCALATES.pass_ and ESCALATES.fail  # met / not met defaults
    plain = Criterion.model_validate({"id": "p", "criterion": "c", "pass": "p", "fail": "f"})
    assert "points" not in plain.canonical() and "applies_when" not in plain.canonical()
    assert judge_set_hash([plain], "m", 0.0, 10) != judge_set_hash([plain, ESCALATES], "m", 0.0, 10)


@pytest.mark.parametrize(
    ("when", "stop", "user", "why"),
    [
        ({"tags_any": ["allergy"]}, "user_done", "chest", "tags_any"),
        ({"tags_none": ["cardiac"]}, "user_done", "chest", "tags_none"),
        ({"expected": {"triage_level": ["gp", "self_care"]}}, "user_done", "chest", "expected.triage_level"),
        ({"stop_reason": ["user_done", "handover"]}, "max_turns", "chest", "stop_reason"),
        ({"facts_revealed": 2}, "user_done", "chest pressure for two hours", "facts_revealed"),
        ({"facts_revealed": 2}, "user_done", "chest pressure two hours, pain goes to my left arm", None),
        ({"tags_any": ["cardiac"], "expected": {"triage_level": ["emergency"]}}, "user_done", "x", None),
    ],
)
def test_applies_when_conditions(when: dict[str, object], stop: str, user: str, why: str | None) -> None:
    found = applicability(
        AppliesWhen.model_validate(when),
        conversation(stop, user),
        SCENARIO.tags,
        SCENARIO.expected,
        SCENARIO.facts,
    )
    assert (found is None) if why is None else (found is not None and found.startswith(f"applies_when.{why}"))


def test_facts_revealed_counts_facts_the_user_told() -> None:
    assert facts_revealed(SCENARIO.facts, conversation(user="my left arm hurts, the pain goes there")) == 1
    assert facts_revealed(SCENARIO.facts, conversation(user="hello")) == 0


@pytest.mark.parametrize("word", ["his", "mum", "since", "does"])
def test_applies_when_and_the_near_duplicate_check_leave_out_the_same_words(word: str) -> None:
    # One list (text/words.py, FACT_FILLER): "his" and "mum" were once only the near-duplicate check's, so a
    # user who said "his" had told half of "his wheeze"; "does" only applies_when's.
    assert facts_revealed([f"{word} wheeze"], conversation(user=f"it is about {word}")) == 0
    told = SCENARIO.model_copy(update={"facts": ["wheeze"]})
    again = SCENARIO.model_copy(update={"id": "again", "facts": [f"wheeze {word}"]})
    assert similarity(told, again) == 1.0


async def test_the_judge_is_not_asked_where_a_criterion_cannot_apply() -> None:
    only_at_handover = rubric("hands-over", 4, applies_when={"stop_reason": ["handover"]})
    async with FakeLLMServer(ScriptedJudge(lambda call: "met")) as server:
        verdicts = await make_stage(server, [ESCALATES, NOTES_ALLERGY, only_at_handover]).judge(
            conversation(), SCENARIO, set()
        )
        asked = len(server.calls)
    assert asked == 1  # only `escalates`
    by_id = {v.criterion_id: v for v in verdicts}
    assert by_id["asks-allergy"].result == "not_applicable" and by_id["asks-allergy"].judge_model is None
    assert by_id["hands-over"].reasoning.startswith("applies_when.stop_reason")


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ("applies_when: {stop_reasons: [handover]}", "applies_when.stop_reasons", "unknown key"),
        ("applies_when: {stop_reason: [finished]}", "applies_when.stop_reason[1]", "handover"),
        ("applies_when: {facts_revealed: -1}", "applies_when.facts_revealed", "should be at least 0"),
        ("applies_when: [handover]", "applies_when", "should be a mapping"),
        ("points: 12", "points", "should be at most 10"),
    ],
)
def test_bad_conditions_name_file_line_and_field(tmp_path: Path, body: str, field: str, says: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent("id: c\ncriterion: The bot asks.\npass: it asks.\nfail: it does not.\n") + body + "\n"
    )
    with pytest.raises(UserError) as caught:
        load_criteria([path])
    [problem] = caught.value.problems
    assert (problem.file, problem.line, problem.field) == (str(path), 5, field)
    assert says in problem.message


async def test_applies_when_needs_no_judge_model() -> None:
    only_at_handover = rubric("hands-over", 4, applies_when={"stop_reason": ["handover"]})
    no_model = JudgeStage([ESCALATES, only_at_handover], None, "sha256:t", [SCENARIO], {}, [])
    by_id = {v.criterion_id: v for v in await no_model.judge(conversation(), SCENARIO, set())}
    assert by_id["hands-over"].result == "not_applicable"
    assert by_id["escalates"].result == "not_judged"
