"""The limits of a bot turn are suite settings on every kind (bots/turn_limits.py, docs/bots.md): checked when
the suite loads (one line naming the field), read into one TurnLimits, and held by the conversation loop for
every channel, whatever the adapter does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from simulator.bots.base import BotError, BotReply
from simulator.bots.turn_limits import TurnLimits, guard_turn
from simulator.config.bot_kinds import LIMIT_FIELDS, bot_kinds
from simulator.config.suite import load_suite
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.errors import UserError
from simulator.record.parts import TextPart, ToolCallPart
from tests.test_hostile_runtime import SCENARIO, _user

BOTS = {
    "http": "{type: http, url: 'http://127.0.0.1:9/chat'",
    "python": "{type: python, factory: 'examples.triage_bot:make_bot'",
    "whatsapp": "{type: whatsapp, webhook_url: 'http://127.0.0.1:9/webhook'",
    "openai_endpoint": "{type: openai_endpoint, base_url: 'http://127.0.0.1:9/v1', model: m",
}
BAD = [
    ("timeout_s: -1", "bot.timeout_s", "should be more than 0"),
    ("timeout_s: 0", "bot.timeout_s", "should be more than 0"),
    ("timeout_s: 100000", "bot.timeout_s", "should be at most 3600"),
    ("max_reply_bytes: 10", "bot.max_reply_bytes", "should be at least 1024"),
    ("max_reply_bytes: 10000000000", "bot.max_reply_bytes", "should be at most 64000000"),
    ("max_messages_per_turn: 0", "bot.max_messages_per_turn", "should be at least 1"),
    ("max_messages_per_conversation: -3", "bot.max_messages_per_conversation", "should be at least 1"),
    ("max_tool_calls_per_turn: 99999999", "bot.max_tool_calls_per_turn", "should be at most 10000"),
    ("max_messages_per_turn: many", "bot.max_messages_per_turn", "should be a whole number"),
]


def _suite(tmp_path: Path, bot: str) -> Path:
    (tmp_path / "s.yaml").write_text("id: s1\npersona: p\ngoal: ask for help\n")
    path = tmp_path / "suite.yaml"
    path.write_text(f"scenarios: {{paths: [s.yaml]}}\nbot: {bot}}}\nuser: {{model: offline}}\n")
    return path


@pytest.mark.parametrize("kind", sorted(BOTS))
@pytest.mark.parametrize(("setting", "field", "phrase"), BAD, ids=[b[0] for b in BAD])
def test_an_absurd_limit_is_one_error_naming_the_field(
    tmp_path: Path, kind: str, setting: str, field: str, phrase: str
) -> None:
    with pytest.raises(UserError) as caught:
        load_suite(_suite(tmp_path, f"{BOTS[kind]}, {setting}"))
    (problem,) = caught.value.problems
    assert problem.field == field and phrase in problem.message, (problem.field, problem.message)
    assert problem.line == 2


@pytest.mark.parametrize("kind", sorted(BOTS))
def test_the_limits_set_in_the_suite_are_the_ones_the_run_holds(tmp_path: Path, kind: str) -> None:
    settings = "timeout_s: 7, max_reply_bytes: 2048, max_messages_per_turn: 3, max_tool_calls_per_turn: 4"
    suite = load_suite(_suite(tmp_path, f"{BOTS[kind]}, {settings}, max_messages_per_conversation: 9"))
    limits = TurnLimits.of(suite.bot)
    deadline = 7 * 5 if kind == "openai_endpoint" else 7  # a model call each tool round, and the answer
    assert limits == TurnLimits(deadline, 2048, 3, 9, 4)
    assert LIMIT_FIELDS | {"timeout_s"} <= type(suite.bot).operational  # a resume may raise them


def test_every_kind_has_the_limits() -> None:
    for kind in bot_kinds():
        assert set(kind.config.model_fields) >= LIMIT_FIELDS, kind.name


class _Channel:
    """A channel whose adapter bounds nothing: the loop's limits are all that hold it."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    async def open(self, conversation_id: str) -> _Channel:
        return self

    async def send(self, text: str, turn: int, **given: Any) -> BotReply:
        return await self.reply() if asyncio.iscoroutinefunction(self.reply) else self.reply()

    async def final_state(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def _never() -> BotReply:
    await asyncio.sleep(3600)
    return BotReply(["late"])


CHANNEL_CASES: dict[str, tuple[Any, TurnLimits, str, str]] = {
    "never answers": (_never, TurnLimits(timeout_s=0.1), "timeout", "bot.timeout_s"),
    "201 messages": (lambda: BotReply(["a"] * 201), TurnLimits(), "over_limit", "bot.max_messages_per_turn"),
    "101 tool calls": (
        lambda: BotReply(parts=[ToolCallPart(name="t", arguments={}) for _ in range(101)]),
        TurnLimits(),
        "over_limit",
        "bot.max_tool_calls_per_turn",
    ),
    "3 MB in one turn": (
        lambda: BotReply(parts=[TextPart(text="x" * 3_000_000)]),
        TurnLimits(max_reply_bytes=2_000_000),
        "over_limit",
        "bot.max_reply_bytes",
    ),
    "conversation past its messages": (
        lambda: BotReply(["a"] * 3),
        TurnLimits(max_messages_per_conversation=4),
        "over_limit",
        "bot.max_messages_per_conversation",
    ),
}


@pytest.mark.parametrize("case", sorted(CHANNEL_CASES))
async def test_the_loop_holds_any_channel_to_the_limits(case: str) -> None:
    reply, limits, kind, phrase = CHANNEL_CASES[case]
    record = await run_conversation(ConversationPlan(SCENARIO, 0), _user, _Channel(reply), limits=limits)
    assert record.error is not None and record.error.kind == kind and phrase in record.error.message


async def test_a_kind_without_a_deadline_of_its_own_is_not_cut() -> None:
    async def slow() -> str:
        await asyncio.sleep(0.2)
        return "done"

    assert await guard_turn(TurnLimits(timeout_s=None), slow()) == "done"
    with pytest.raises(BotError):
        await guard_turn(TurnLimits(timeout_s=0.01), asyncio.sleep(10))
