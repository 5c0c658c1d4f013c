"""The `python` adapter: `module:factory` returns a fresh bot object with `send(text)`, sync or async."""

from __future__ import annotations

__all__ = ["PythonBotFactory"]

import asyncio
import importlib
import inspect
import time
from collections.abc import Callable
from typing import Any

from simulator.bots.base import BotError, BotReply, normalise_reply
from simulator.bots.reply_check import checked_flags, checked_state
from simulator.errors import UserError


def load_factory(spec: str) -> Callable[[], Any]:
    """Import `module:attr` (attr may be dotted); a mistake is a UserError that names the spec."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(
            f"bot factory '{spec}' must look like module:factory (e.g. examples.triage_bot:make_bot)"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(
            f"bot factory '{spec}': cannot import module '{module_name}' ({exc}); "
            f"run from the folder that contains it or install it"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise UserError(f"bot factory '{spec}': module '{module_name}' has no attribute '{attr}'")
        target = getattr(target, part)
    if not callable(target):
        raise UserError(f"bot factory '{spec}' is not callable; point it at a function or class")
    return target


class PythonSession:
    def __init__(self, bot: Any) -> None:
        self._bot = bot
        self._last_state: dict[str, Any] | None = None

    async def send(self, text: str, turn: int) -> BotReply:
        start = time.perf_counter()
        try:
            if inspect.iscoroutinefunction(self._bot.send):
                result = await self._bot.send(text)
            else:
                # A blocking bot runs in a thread so the other conversations keep going.
                result = await asyncio.to_thread(self._bot.send, text)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            raise BotError("bot_exception", f"{type(exc).__name__}: {exc}") from exc
        reply = normalise_reply(result)
        reply.handed_over, reply.closed, reply.state = checked_flags(
            reply.handed_over, reply.closed, reply.state
        )
        reply.latency_s = time.perf_counter() - start
        if reply.state is not None:
            self._last_state = reply.state
        return reply

    async def final_state(self) -> dict[str, Any] | None:
        getter = getattr(self._bot, "final_state", None)
        if getter is None:
            return self._last_state
        try:
            state = getter()
            if inspect.isawaitable(state):
                state = await state
        except Exception as exc:
            raise BotError("bot_exception", f"final_state() raised {type(exc).__name__}: {exc}") from exc
        return checked_state(state, "final_state()") if state is not None else self._last_state

    async def aclose(self) -> None:
        closer = getattr(self._bot, "aclose", None) or getattr(self._bot, "close", None)
        if closer is not None:
            result = closer()
            if inspect.isawaitable(result):
                await result


class PythonBotFactory:
    """Makes one fresh PythonSession per conversation."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._factory = load_factory(spec)

    async def open(self, conversation_id: str) -> PythonSession:
        try:
            bot = self._factory()
            if inspect.isawaitable(bot):
                bot = await bot
        except Exception as exc:
            raise BotError(
                "bot_exception", f"factory {self.spec} raised {type(exc).__name__}: {exc}"
            ) from exc
        if not hasattr(bot, "send"):
            raise UserError(
                f"bot factory '{self.spec}' returned {type(bot).__name__}, which has no send(text)"
            )
        return PythonSession(bot)
