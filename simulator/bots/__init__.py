"""Bot adapters: python, http, chat, whatsapp and openai_endpoint, each making a fresh session per conversation."""

from __future__ import annotations

__all__ = ["BotError", "BotFactory", "BotReply", "BotSession", "Reply", "make_bot_factory"]

from typing import TYPE_CHECKING, Protocol

from simulator.bots.base import BotError, BotReply, BotSession, Reply

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub


class BotFactory(Protocol):
    """Opens one session per conversation; in a suite with an environment, `open` is also given the
    conversation's environment (simulator/bots/environment.py) as `environment=`."""

    async def open(self, conversation_id: str) -> BotSession: ...


def make_bot_factory(suite: Suite, hub: ModelHub) -> BotFactory:
    """The adapter the suite's `bot:` section names."""
    bot = suite.bot
    if bot.type == "python":
        from simulator.bots.python_bot import PythonBotFactory

        return PythonBotFactory(bot.factory)
    if bot.type == "http":
        from simulator.bots.http_bot import HttpBotFactory

        return HttpBotFactory(bot, suite.base_dir)
    if bot.type == "whatsapp":
        from simulator.bots.whatsapp import WhatsAppBotFactory

        return WhatsAppBotFactory(bot, suite.base_dir, record_raw=suite.record_raw)
    if bot.type == "openai_endpoint":
        from simulator.bots.openai_endpoint import OpenAIEndpointFactory

        return OpenAIEndpointFactory(bot, suite.base_dir)
    if bot.type == "callable":
        from simulator.errors import UserError

        raise UserError(
            f"the bot is {bot.describe()}, a Python object given to simulator.run; run it (or resume this run) "
            "from Python with the same object: simulator.run(suite, bot=..., resume=...)"
        )
    from simulator.bots.chat_bot import ChatBotFactory

    return ChatBotFactory(bot, suite, hub)
