"""Where a WhatsApp bot turn ends (`bot.turn_end`, docs/whatsapp.md#one-bot-turn), against real pywa 4 bots
(tests/bots/pywa_burst_bot.py) that send three messages in a row with small gaps.

- A bot that runs its handlers inside the webhook request: once the run has seen it do so, its turns end at
  the webhook's answer (`end: answer`), with all three messages, whatever the gaps.
- pywa's own FastAPI routes answer at once and handle in the background: the answer says nothing, the quiet
  period ends every turn, and no message is ever cut off.
- A bot that answers the webhook and goes on sending (a task left running): seen while confirming, the rule
  is turned off; seen after a turn was ended at the answer, the late messages open the next turn with a note
  and the rule is off for the rest of the run.
- `turn_end: quiet` (the default) keeps the quiet period for every turn.
- A typing indicator shown after a message holds the turn open past the quiet period until the next message,
  on either serving style and either `turn_end`; without it the same pause splits the answer; an indicator
  followed by nothing lapses (WhatsApp hides it after 25 s) and the turn ends with a note saying so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from simulator.bots.whatsapp import WhatsAppBotFactory
from simulator.bots.whatsapp.adapter import CONFIRMING_TURNS
from simulator.config.bots import BotStart
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from simulator.record.redact import forget_secrets
from tests._whatsapp_bots import QUIET_S
from tests.bots.pywa_burst_bot import BURST, THINKING
from tests.support.waiting import eventually
from tests.test_whatsapp_pywa import BOT_ENV, ROOT, SECRETS

pytest.importorskip("pywa_async")

PAUSE_S = 2.0  # a bot thinking longer than QUIET_S (a busy machine only makes it longer)


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    yield
    forget_secrets()


async def _factory(
    tmp_path: Path, serve: str, gap_s: float, pause_s: float = 1.0, **fields: Any
) -> AsyncIterator[WhatsAppBotFactory]:
    start = BotStart(
        command=["{python}", "-m", "tests.bots.pywa_burst_bot", "--port", "{port}", "--serve", serve,
                 "--gap-s", str(gap_s), "--pause-s", str(pause_s)],
        cwd=str(ROOT),
        env=BOT_ENV,
        ready={"url": "http://127.0.0.1:{port}/health", "timeout_s": 30},  # type: ignore[arg-type]
    )  # fmt: skip
    fields.setdefault("quiet_s", QUIET_S)
    if fields.setdefault("turn_end", "auto") == "default":
        del fields["turn_end"]  # the config's own default
    config = WhatsAppBotConfig(
        webhook_url="http://127.0.0.1:{port}/webhook", timeout_s=15, start=start, **fields
    )
    factory = WhatsAppBotFactory(config, tmp_path)
    try:
        await factory.start(tmp_path)
        yield factory
    finally:
        await factory.aclose()


async def _until_sent(session: Any, count: int) -> None:
    """Once the bot has sent `count` messages since its last turn ended (waiting in the conversation's inbox
    for the next turn): waited for, as the person reading and typing meanwhile would, not timed."""
    inbox = session._inbox
    await eventually(lambda: inbox.queue.qsize() >= count, f"{count} late message(s) from the bot")


@pytest.mark.parametrize("gap_s", [0.02, 0.2])
async def test_an_inline_bot_ends_at_its_answer_with_every_message(tmp_path: Path, gap_s: float) -> None:
    async for factory in _factory(tmp_path, "inline", gap_s):
        session = await factory.open("run/burst#0/1")
        ends = []
        for turn in range(CONFIRMING_TURNS + 3):
            reply = await session.send("burst please", turn)
            assert reply.messages == list(BURST)  # never cut short, before or after the rule is on
            assert reply.raw is not None
            ends.append(reply.raw["end"])
        assert ends == ["quiet"] * CONFIRMING_TURNS + ["answer"] * 3
        assert factory.turn_ends.off is None
        other = await factory.open(
            "run/burst#1/1"
        )  # the rule is the run's: another conversation starts with it
        greeting = await other.send("hello", 0)
        assert greeting.messages == ["Hello, I'm the surgery's helper.", "What is the main problem today?"]
        assert greeting.raw is not None and greeting.raw["end"] == "answer"


async def test_pywas_background_routes_wait_for_the_quiet_period(tmp_path: Path) -> None:
    async for factory in _factory(tmp_path, "background", 0.05):
        session = await factory.open("run/burst#0/1")
        for turn in range(CONFIRMING_TURNS + 2):
            reply = await session.send("burst", turn)
            assert reply.messages == list(BURST)
            assert reply.raw is not None and reply.raw["end"] == "quiet"
        assert factory.turn_ends.confirmed == 0  # the answer came before the messages: nothing confirmed


async def test_a_bot_that_sends_after_answering_turns_the_rule_off_while_confirming(tmp_path: Path) -> None:
    async for factory in _factory(tmp_path, "inline", 0.05):
        session = await factory.open("run/late#0/1")
        first = await session.send("burst", 0)
        late = await session.send("late", 1)
        assert late.messages == ["Let me check.", "Still checking.", "Please see your GP this week."]
        assert factory.turn_ends.off == "the bot sent a message after answering the webhook"
        for turn in range(2, CONFIRMING_TURNS + 4):
            reply = await session.send("burst", turn)
            assert reply.raw is not None and reply.raw["end"] == "quiet"
        assert first.raw is not None and first.raw["end"] == "quiet"


async def test_late_messages_after_an_answer_end_are_said_and_turn_the_rule_off(tmp_path: Path) -> None:
    async for factory in _factory(tmp_path, "inline", 0.1):
        session = await factory.open("run/late#0/1")
        for turn in range(CONFIRMING_TURNS):
            await session.send("burst", turn)
        cut = await session.send("late", CONFIRMING_TURNS)
        assert cut.raw is not None and cut.raw["end"] == "answer"
        assert cut.messages == ["Let me check."]  # what a bot sending after its answer risks; said next turn
        # The person reads and types: the bot's two late messages come meanwhile.
        await _until_sent(session, 2)
        following = await session.send("burst", CONFIRMING_TURNS + 1)
        assert following.messages[:2] == ["Still checking.", "Please see your GP this week."]
        assert following.raw is not None and following.raw["end"] == "quiet"
        assert (
            "2 message(s) came after the previous bot turn was ended at the webhook's answer"
            in (following.raw["notes"][0])
        )
        assert factory.turn_ends.off is not None and not factory.turn_ends.at_answer


@pytest.mark.parametrize("turn_end", ["quiet", "default"])
async def test_turn_end_quiet_keeps_the_quiet_period(tmp_path: Path, turn_end: str) -> None:
    async for factory in _factory(tmp_path, "inline", 0.02, turn_end=turn_end):
        session = await factory.open("run/burst#0/1")
        for turn in range(CONFIRMING_TURNS + 2):
            reply = await session.send("burst", turn)
            assert reply.messages == list(BURST)
            assert reply.raw is not None and reply.raw["end"] == "quiet"


@pytest.mark.parametrize(("serve", "turn_end"), [("background", "quiet"), ("inline", "auto")])
async def test_a_typing_indicator_holds_the_turn_past_the_quiet_period(
    tmp_path: Path, serve: str, turn_end: str
) -> None:
    """quiet_s 1.2 s, the bot thinks 2 s after "let me check": with the indicator, one turn, both messages."""
    async for factory in _factory(tmp_path, serve, 0.02, pause_s=PAUSE_S, turn_end=turn_end):
        session = await factory.open("run/think#0/1")
        for turn in range(CONFIRMING_TURNS + 1):  # with `auto`, past the turns that confirm the answer rule
            reply = await session.send("think about it", turn)
            assert reply.messages == list(THINKING)
            assert reply.raw is not None
            assert reply.raw["end"] == (
                "answer" if turn >= CONFIRMING_TURNS and turn_end == "auto" else "quiet"
            )
            assert any("typing indicator" in note for note in reply.raw["notes"])
            gap = reply.raw["messages"][1]["at_s"] - reply.raw["messages"][0]["at_s"]
            assert gap >= PAUSE_S - 0.1 > QUIET_S  # the answer came after the quiet period had passed


async def test_the_same_pause_without_the_indicator_splits_the_answer(tmp_path: Path) -> None:
    """The control: a bot that pauses 2 s without saying it is typing has its turn ended at quiet_s."""
    async for factory in _factory(tmp_path, "background", 0.02, pause_s=PAUSE_S, turn_end="quiet"):
        session = await factory.open("run/pause#0/1")
        first = await session.send("pause a moment", 0)
        assert first.messages == [THINKING[0]]
        assert first.raw is not None and first.raw["end"] == "quiet"
        await _until_sent(session, 1)  # the late half of the answer
        following = await session.send("hello", 1)
        assert following.messages[0] == THINKING[1]  # the late half opens the next turn


async def test_an_indicator_followed_by_nothing_lapses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot shows typing and sends nothing more: the turn waits as long as the indicator shows (shortened
    here from WhatsApp's 25 s), then ends with what was sent and a note."""
    from simulator.bots.whatsapp import adapter

    monkeypatch.setattr(adapter, "TYPING_LASTS_S", 1.5)
    async for factory in _factory(tmp_path, "background", 0.02, turn_end="quiet"):
        session = await factory.open("run/typing#0/1")
        reply = await session.send("typing only", 0)
        assert reply.messages == [THINKING[0]]
        assert reply.raw is not None and reply.raw["end"] == "quiet"
        notes = reply.raw["notes"]
        assert any("sent no message within 1.5 s (WhatsApp hides the indicator then)" in n for n in notes)
