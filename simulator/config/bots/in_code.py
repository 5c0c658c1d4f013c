"""The `callable` bot kind: a bot given in code to `simulator.run(..., bot=...)`. It fits the registry like
any kind (a config the manifest records, a factory), but the suite alone cannot build it: IN_CODE."""

from __future__ import annotations

__all__ = ["CallableBotConfig"]

from typing import ClassVar, Literal

from pydantic import Field

from simulator.config.bot_kinds import (
    ENVIRONMENT,
    IN_CODE,
    LIMIT_FIELDS,
    BotConfig,
    BotKind,
    register_bot_kind,
    turn_timeout,
)


class CallableBotConfig(BotConfig):
    """A bot given in code to `simulator.run(..., bot=...)`: a function, an object with `send`, or a factory.
    The record keeps its name; the bot itself lives only in the program that ran it."""

    type: Literal["callable"] = "callable"
    name: str = Field(min_length=1)
    timeout_s: float = turn_timeout()  # as a python bot's: one call of send()

    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS | {"timeout_s"}

    def describe(self) -> str:
        return f"callable:{self.name}"


register_bot_kind(
    BotKind(
        "callable",
        CallableBotConfig,
        "simulator.bots.python_bot:callable_bot_factory",
        frozenset({ENVIRONMENT, IN_CODE}),
    )
)
