"""Bot adapters, one per registered bot kind (simulator/config/bot_kinds.py), each making a fresh session per
conversation."""

from __future__ import annotations

__all__ = ["BotError", "BotFactory", "BotReply", "BotSession", "Reply", "make_bot_factory"]

from typing import TYPE_CHECKING, Protocol, cast

from simulator.bots.base import BotError, BotReply, BotSession, Reply
from simulator.errors import UserError
from simulator.importing import import_callable

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub


class BotFactory(Protocol):
    """Opens one session per conversation; in a suite with an environment, `open` is also given the
    conversation's environment (simulator/bots/environment.py) as `environment=`."""

    async def open(self, conversation_id: str) -> BotSession: ...


def make_bot_factory(suite: Suite, hub: ModelHub) -> BotFactory:
    """The adapter of the kind the suite's `bot:` names: its registered factory, imported now."""
    kind = suite.bot.kind()
    try:
        build = import_callable(kind.factory, "module:callable", "simulator.bots.http_bot:http_bot_factory")
    except ValueError as exc:
        raise UserError(f"bot type '{kind.name}': its factory cannot be loaded: {exc}") from None
    return cast(BotFactory, build(suite.bot, suite, hub))
