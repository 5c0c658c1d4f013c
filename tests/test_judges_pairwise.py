"""Pairwise judging in both orders, position inconsistency, and the same-family (self-enhancement) warning."""

from __future__ import annotations

import pytest

from simulator.analysis.pairwise import summarise_pairs
from simulator.judging.hygiene import model_family, same_family_warnings
from simulator.judging.pairwise import judge_pair
from simulator.testing.fake_llm import FakeLLMServer
from tests.fake_judge import FakeJudge, transcript_regions
from tests.test_judges_llm import ASKS_BREATH, CHEST, conversation, make_judge

ASKS = conversation(
    ("chest pressure since 2pm", ["Does the pain spread to your arm?", "Are you short of breath?"]),
    ("no", ["Please call 999 now."]),
)


@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_JUDGE_KEY", "test-key")


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_consistent_preference_wins_in_both_orders(api: str) -> None:
    async with FakeLLMServer(FakeJudge()) as server:
        judge = make_judge(server, api)
        result = await judge_pair(judge.client, judge.model, ASKS_BREATH, "chest#0", ASKS.turns, CHEST.turns)
        swapped = await judge_pair(judge.client, judge.model, ASKS_BREATH, "chest#0", CHEST.turns, ASKS.turns)
    assert (result.winner, result.position_consistent) == ("A", True)
    assert [o.choice for o in result.orders] == ["A", "A"]
    assert (swapped.winner, swapped.position_consistent) == ("B", True)
    # The second call really showed the transcripts the other way round.
    first_regions, _ = transcript_regions("\n".join(m.content for m in server.calls[1].messages))
    assert "short of breath" not in first_regions[0] and "short of breath" in first_regions[1]
    assert result.usage.calls == 2


async def test_a_verdict_that_flips_with_the_order_is_an_inconsistent_tie() -> None:
    async with FakeLLMServer(FakeJudge(position_bias=True)) as server:
        judge = make_judge(server, "anthropic")
        biased = await judge_pair(judge.client, judge.model, ASKS_BREATH, "chest#0", CHEST.turns, CHEST.turns)
        clear = await judge_pair(judge.client, judge.model, ASKS_BREATH, "chest#1", ASKS.turns, CHEST.turns)
    assert [o.choice for o in biased.orders] == ["A", "B"]  # "first" both times
    assert (biased.winner, biased.position_consistent) == ("tie", False)
    summary = summarise_pairs([biased, clear])
    assert (summary.a_wins, summary.b_wins, summary.ties, summary.errors) == (1, 0, 1, 0)
    assert (summary.inconsistent.k, summary.inconsistent.n) == (1, 2)
    assert summary.inconsistent.low < 0.5 < summary.inconsistent.high


async def test_an_unbiased_tie_is_consistent_and_errors_are_counted_apart() -> None:
    async with FakeLLMServer(FakeJudge(position_bias=False)) as server:
        judge = make_judge(server, "openai")
        tie = await judge_pair(judge.client, judge.model, ASKS_BREATH, "chest#0", CHEST.turns, CHEST.turns)
    async with FakeLLMServer(FakeJudge(garbage_for={"asks-breath"})) as server:
        judge = make_judge(server, "openai")
        broken = await judge_pair(judge.client, judge.model, ASKS_BREATH, "chest#0", CHEST.turns, ASKS.turns)
    assert (tie.winner, tie.position_consistent) == ("tie", True)
    assert broken.winner is None and broken.error is not None and "not a JSON object" in broken.error
    assert len(server.calls) == 4  # two orders, each with its one corrective retry
    summary = summarise_pairs([tie, broken])
    assert summary.errors == 1 and (summary.inconsistent.k, summary.inconsistent.n) == (0, 1)


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        ("anthropic:claude-sonnet-4-5", "claude"),
        ("openai:gpt-4.1-mini", "gpt"),
        ("openai:o3-mini", "gpt"),
        ("openai:llama-3.1-8b-instruct", "llama"),
        ("local:smollm2", "smollm"),
        ("openai:Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("offline", None),
        (None, None),
    ],
)
def test_model_families(spec: str | None, family: str | None) -> None:
    assert model_family(spec) == family


def test_same_family_warnings_name_the_role_and_the_bias() -> None:
    warnings = same_family_warnings(
        "anthropic:claude-sonnet-4-5",
        {"bot": "openai:gpt-4.1-mini", "simulated user": "anthropic:claude-haiku-4-5"},
    )
    assert len(warnings) == 1
    assert "simulated user (anthropic:claude-haiku-4-5)" in warnings[0] and "self-enhancement" in warnings[0]
    assert same_family_warnings(None, {"bot": "anthropic:claude-haiku-4-5"}) == []
    assert same_family_warnings("openai:gpt-4.1", {"bot": None, "simulated user": "offline"}) == []
