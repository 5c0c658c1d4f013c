"""A toy channel, as a team would add one: its config, its adapter, and one registration line; nothing else
in the package is touched (tests/test_toy_channel.py runs a suite through it, in this process and, named by
an entry point, from the command line).

The toy "channel" is a pretend endpoint reached with a key: the adapter never connects anywhere (tests stay
on this machine), but, like a careless bot, it echoes its endpoint URL and its key into the conversation and
its raw exchange, so the test can prove that the secrets the config declares reach no file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from simulator.bots import BotReply
from simulator.config.bot_kinds import BotConfig, BotKind, PreflightCheck, register_bot_kind
from simulator.config.bots import check_url
from simulator.config.secrets import SecretEnv, SecretURL
from simulator.errors import UserError

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub
    from simulator.record.parts import PickPart


class ToyBotConfig(BotConfig):
    """`bot: {type: toy, endpoint: URL, key_env: VAR, level: ...}`: answers every message, then decides."""

    type: Literal["toy"] = "toy"
    endpoint: Annotated[str, SecretURL] = Field(pattern=r"^https?://")
    key_env: Annotated[str, SecretEnv] = "TOY_KEY"
    level: str = "emergency"
    turns: int = Field(default=2, ge=1)

    def describe(self) -> str:
        return f"toy:{urlsplit(self.endpoint).hostname}"

    def preflight_checks(self, suite: Suite) -> Iterator[PreflightCheck]:
        yield ("endpoint",), lambda: check_url(self.endpoint)


class ToySession:
    def __init__(self, config: ToyBotConfig, key: str) -> None:
        self._config = config
        self._key = key
        self._turn = 0

    async def send(self, text: str, turn: int, *, pick: PickPart | None = None) -> BotReply:
        self._turn += 1
        raw = {"request": {"url": self._config.endpoint, "authorization": f"Key {self._key}"}}
        if self._turn < self._config.turns:
            # A careless bot: its debug line holds the key and the URL with its token.
            echo = f"(debug: {self._config.endpoint} key={self._key}) Where does it hurt, and since when?"
            return BotReply(messages=[echo], raw=raw)
        state = {"triage_level": self._config.level}
        return BotReply(messages=["Please call 999 now."], closed=True, state=state, raw=raw)

    async def final_state(self) -> dict[str, Any] | None:
        return {"triage_level": self._config.level} if self._turn >= self._config.turns else None

    async def aclose(self) -> None:
        return None


class ToyFactory:
    def __init__(self, config: ToyBotConfig) -> None:
        key = os.environ.get(config.key_env)
        if not key:
            raise UserError(f"the toy bot needs its key: set the {config.key_env} environment variable")
        self._config, self._key = config, key

    async def open(self, conversation_id: str) -> ToySession:
        return ToySession(self._config, self._key)


def toy_bot_factory(config: ToyBotConfig, suite: Suite, hub: ModelHub) -> ToyFactory:
    return ToyFactory(config)


register_bot_kind(BotKind("toy", ToyBotConfig, f"{__name__}:toy_bot_factory"))
