"""A bot the suite starts (`bot.start`) that dies is said the same way on every channel that starts one
(http, whatsapp, openai_endpoint): the conversation is recorded as the bot's error, never judged, and its
message names how the process ended (its exit code, or the signal that killed it) and shows the end of its
log. A bot that never gets ready is one start error with its log's end, on every channel too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.bots.http_bot import HttpBotFactory
from simulator.bots.openai_endpoint import OpenAIEndpointFactory
from simulator.bots.whatsapp import WhatsAppBotFactory
from simulator.config.bots import BotStart, HttpBotConfig
from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from simulator.errors import UserError
from simulator.record.redact import forget_secrets
from tests.support.dying_bots import (
    ENDS,
    LOG_SAYS,
    NEVER_READY,
    bot_error,
    dying_start,
    never_ready_start,
    one_conversation,
)

WHATSAPP_SECRETS = ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN")


def _whatsapp(start: BotStart, tmp_path: Path, **config: Any) -> WhatsAppBotFactory:
    settings: dict[str, Any] = {"verify": False, "quiet_s": 0.2, "timeout_s": 10, **config}
    return WhatsAppBotFactory(
        WhatsAppBotConfig(webhook_url="http://127.0.0.1:{port}/webhook", start=start, **settings), tmp_path
    )


CHANNELS: dict[str, Callable[[BotStart, Path], Any]] = {
    "http": lambda start, tmp: HttpBotFactory(
        HttpBotConfig(url="http://127.0.0.1:{port}/chat", start=start), tmp
    ),
    "whatsapp": _whatsapp,
    "openai_endpoint": lambda start, tmp: OpenAIEndpointFactory(
        OpenAIEndpointBotConfig(base_url="http://127.0.0.1:{port}/v1", model="team-ft", start=start), tmp
    ),
}


@pytest.fixture(autouse=True)
def _made_up_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The whatsapp channel makes its secrets up for a bot it starts; they are forgotten after each test."""
    for name in WHATSAPP_SECRETS:
        monkeypatch.delenv(name, raising=False)
    yield
    forget_secrets()


@pytest.mark.parametrize("end", sorted(ENDS))
@pytest.mark.parametrize("channel", sorted(CHANNELS))
async def test_a_bot_that_dies_mid_conversation_is_an_error_naming_its_exit_and_log(
    channel: str, end: str, tmp_path: Path
) -> None:
    factory = CHANNELS[channel](dying_start(end), tmp_path)
    await factory.start(tmp_path)  # as the run starts it: its log is the run folder's bot.log
    try:
        record = await one_conversation(factory)
    finally:
        await factory.aclose()
    message = bot_error(record, "connection")
    # Its exit and what that means, not the HTTP client's "Server disconnected" ...
    assert f"{ENDS[end]} during the run" in message and "neither judged nor counted" in message, message
    assert str(tmp_path / "bot.log") in message
    # ... and the end of its log, which says why.
    assert f"dying: {end}" in message and LOG_SAYS.get(end, "dying:") in message, message
    assert "Server disconnected" not in message and "Connection error" not in message


@pytest.mark.parametrize("case", sorted(NEVER_READY))
@pytest.mark.parametrize("channel", sorted(CHANNELS))
async def test_a_bot_that_never_gets_ready_is_one_start_error_with_its_log(
    channel: str, case: str, tmp_path: Path
) -> None:
    script, says, logged = NEVER_READY[case]
    factory = CHANNELS[channel](never_ready_start(script), tmp_path)
    try:
        with pytest.raises(UserError, match=says) as caught:  # the run stops here, with one clear error
            await factory.start(tmp_path)
        record = await one_conversation(factory)  # a conversation opened anyway is the same error
    finally:
        await factory.aclose()
    assert logged in str(caught.value) and str(tmp_path / "bot.log") in str(caught.value)
    assert bot_error(record, "start") == str(caught.value)


@pytest.mark.parametrize("end", ["exit", "SIGKILL"])
async def test_a_whatsapp_bot_dying_at_the_handshake_is_a_start_error_naming_its_exit(
    end: str, tmp_path: Path
) -> None:
    factory = _whatsapp(dying_start(end), tmp_path, verify=True)
    try:
        with pytest.raises(UserError) as caught:
            await factory.start(tmp_path)
    finally:
        await factory.aclose()
    message = str(caught.value)
    assert message.startswith("the webhook verification GET to http://127.0.0.1:")
    assert ENDS[end] in message and f"dying: {end}" in message, message


async def test_a_whatsapp_bot_that_answers_the_webhook_then_dies_is_said_at_once(tmp_path: Path) -> None:
    """Meta asks a bot to answer the webhook at once and reply after: one that dies after answering is an
    error naming its exit as soon as it has died, not a silence waited out to bot.timeout_s."""
    factory = _whatsapp(dying_start("answer-then-exit"), tmp_path, timeout_s=30)
    await factory.start(tmp_path)
    try:
        record = await one_conversation(factory)
    finally:
        await factory.aclose()
    message = bot_error(record, "connection")
    assert "exited with code 3 during the run" in message and "dying: answer-then-exit" in message
    assert record.ended_at is not None and (record.ended_at - record.started_at).total_seconds() < 10
