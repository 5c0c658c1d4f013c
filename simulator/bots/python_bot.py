"""The `python` adapter: `module:factory` returns a fresh bot object with `send(text)`, sync or async; a
bot given in code (`simulator.run(..., bot=...)`) goes through the same session (`bot_from_object`)."""

from __future__ import annotations

__all__ = [
    "PythonBotFactory",
    "bot_from_object",
    "callable_bot_factory",
    "object_name",
    "python_bot_factory",
]

import asyncio
import contextlib
import copy
import functools
import inspect
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from simulator.bots.base import BotError, BotReply, normalise_reply
from simulator.bots.environment import Environment
from simulator.bots.reply_check import checked_flags, checked_size, checked_state, user_code_error
from simulator.bots.turn_limits import ABANDON_AFTER_S, TurnLimits
from simulator.bots.user_threads import in_daemon_thread
from simulator.config.bots import PythonBotConfig, factory_needs, load_factory
from simulator.config.bots.in_code import CallableBotConfig
from simulator.errors import UserError
from simulator.eventloop import Abandoned, apart, being_cancelled
from simulator.record.parts import Part, PickPart, TextPart

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub


def _takes(function: Callable[..., Any], name: str) -> bool:
    """True when `function` has a parameter called `name` (`pick`: it is given the option the person
    tapped; `env`: it is given the conversation's environment)."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class _Raised(Exception):
    """What in-process user code raised, BaseExceptions included, carried out of its task."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)  # never str(exc): user code's __str__ may raise
        self.exc = exc


async def _run_user(function: Callable[[], Any]) -> Any:
    """`function()` of user code, awaited when it returns an awaitable; anything it raises wrapped, inside
    the task (asyncio re-raises a SystemExit or KeyboardInterrupt that leaves a task out of the event loop,
    ending the run). A CancelledError is the engine's only when this task was cancelled (a stop signal, the
    deadline); one the bot raised itself is its exception like any other (it used to end the
    conversation's task, and the conversation was never recorded)."""
    try:
        value = function()
        if inspect.isawaitable(value):
            value = await value
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError) and being_cancelled():
            raise
        raise _Raised(exc) from exc
    return value


class PythonSession:
    def __init__(
        self, bot: Any, environment: Environment | None = None, limits: TurnLimits | None = None
    ) -> None:
        self._bot = bot
        # An HTTP bot's limits (bot.timeout_s, bot.max_reply_bytes, bot.max_messages_per_turn).
        self._limits = limits or TurnLimits()
        self._last_state: dict[str, Any] | None = None
        self._takes_pick = _takes(bot.send, "pick")
        # A bot whose send(text, parts=None) takes parts gets the user turn's parts: each message of a burst,
        # photos and voice notes (as MediaPart, with what they show or say); others read the text.
        self._takes_parts = _takes(bot.send, "parts")
        # A bot whose send(text, env=None) takes `env` is given the conversation's environment each turn.
        self._env = environment if _takes(bot.send, "env") else None

    takes_parts = True  # the engine gives a turn's parts; a bot gets them when its send takes `parts`

    async def send(
        self, text: str, turn: int, *, pick: PickPart | None = None, parts: list[Part] | None = None
    ) -> BotReply:
        start = time.perf_counter()
        # A bot whose send(text, pick=None) takes a pick gets the tapped option; others read its title.
        kwargs: dict[str, Any] = {"pick": pick} if self._takes_pick else {}
        if self._takes_parts:
            kwargs["parts"] = list(parts) if parts is not None else [TextPart(text=text)]
        if self._env is not None:
            kwargs["env"] = self._env
        result = await self._bounded("send()", self._call(text, kwargs))
        reply = self._checked(result)
        reply.handed_over, reply.closed, reply.state = checked_flags(
            reply.handed_over, reply.closed, reply.state
        )
        reply.latency_s = time.perf_counter() - start
        if reply.state is not None:
            self._last_state = reply.state
        return reply

    async def _bounded(self, what: str, call: Coroutine[Any, Any, Any]) -> Any:
        """`call` (user code) under the turn's deadline, in a task of its own (a blocking bot's thread is
        left to finish on its own; a coroutine that will not end when cancelled is closed and left,
        `eventloop.apart`); what it raised, BaseExceptions included, as this turn's bot error."""
        timeout = self._limits.timeout_s
        try:
            return await apart(call, timeout, ABANDON_AFTER_S)
        except TimeoutError as exc:
            left = (
                f"; it did not stop when cancelled and was abandoned {ABANDON_AFTER_S:g} s later"
                if isinstance(exc, Abandoned)
                else ""
            )
            raise BotError(
                "timeout",
                f"{what} did not return within {timeout or 0:g} s (bot.timeout_s, the turn's deadline){left}",
            ) from None
        except _Raised as raised:  # SystemExit, KeyboardInterrupt... from user code: this turn's error
            raise BotError(
                "bot_exception", user_code_error(raised.exc, "" if what == "send()" else what)
            ) from None

    def _checked(self, result: Any) -> BotReply:
        """What send() returned, within an HTTP bot's caps: the number of its messages or parts counted
        first (a reply of 10^6 parts is refused before any is read), then its size and depth."""
        limits = self._limits
        try:
            fields = ("messages", "parts", "state")
            shaped = isinstance(result, str | list | tuple | dict)
            for many in [result] if shaped else [getattr(result, f, None) for f in ("messages", "parts")]:
                if isinstance(many, list | tuple):
                    limits.check_count(len(many))
            checked = result if shaped else [getattr(result, f, None) for f in fields]
            checked_size(checked, "the bot's reply", limits.max_reply_bytes)
            return normalise_reply(result)
        except (BotError, asyncio.CancelledError):
            raise
        except BaseException as exc:
            raise BotError(
                "invalid_reply",
                f"reading what send() returned ({type(result).__name__}) raised {user_code_error(exc)}; return "
                "str, list[str], a list of parts or Reply",
            ) from None

    async def _call(self, text: str, kwargs: dict[str, Any]) -> Any:
        """The bot's send, what it raises wrapped (`_run_user`)."""
        send: Callable[[], Any] = functools.partial(self._bot.send, text, **kwargs)
        if not inspect.iscoroutinefunction(self._bot.send):
            # A blocking bot runs in a daemon thread so the other conversations keep going, and one that
            # never returns cannot keep the run from ending (user_threads.py).
            send = functools.partial(in_daemon_thread, send)
        result = await _run_user(send)
        if inspect.isawaitable(result):  # a sync send that returned an awaitable
            result = await _run_user(lambda: result)
        return result

    async def final_state(self) -> dict[str, Any] | None:
        getter = getattr(self._bot, "final_state", None)
        if getter is None:
            return self._last_state
        state = await self._bounded("final_state()", _run_user(getter))
        checked_size(state, "final_state()", self._limits.max_reply_bytes)
        return checked_state(state, "final_state()") if state is not None else self._last_state

    async def aclose(self) -> None:
        """The bot's own `aclose()` or `close()`, once the conversation has ended, under the turn's deadline
        and as user code (a blocking close in a thread): one that never returned held its conversation, and
        the run, for ever. What it raises, or a close past the deadline, is left: the conversation's record
        is already decided by what the bot said (a stop signal still stops the run)."""
        closer = getattr(self._bot, "aclose", None) or getattr(self._bot, "close", None)
        if closer is None:
            return
        call: Callable[[], Any] = closer
        if not inspect.iscoroutinefunction(closer):
            call = functools.partial(in_daemon_thread, closer)
        with contextlib.suppress(BotError):
            await self._bounded("close()", _run_user(call))


class PythonBotFactory:
    """Makes one fresh PythonSession per conversation: from `module:factory`, or from `factory` itself
    (a zero-argument callable given in code, named `spec` in messages)."""

    def __init__(
        self, spec: str, factory: Callable[[], Any] | None = None, limits: TurnLimits | None = None
    ) -> None:
        self.spec = spec
        self._factory = factory if factory is not None else load_factory(spec)
        self.limits = limits or TurnLimits()

    async def open(self, conversation_id: str, environment: Environment | None = None) -> PythonSession:
        # A factory with an `env` parameter is given the conversation's environment (docs/environment.md).
        kwargs = {"env": environment} if environment is not None and _takes(self._factory, "env") else {}
        try:
            bot = await _run_user(functools.partial(self._factory, **kwargs))
        except _Raised as raised:
            raise BotError("bot_exception", user_code_error(raised.exc, f"factory {self.spec}")) from None
        if not hasattr(bot, "send") and callable(bot):
            bot = _ReplyFunction(bot)  # a callable product is a function bot, as `bot=f` given in code is
        if not hasattr(bot, "send"):
            raise UserError(
                f"bot factory '{self.spec}' returned {type(bot).__name__}, which has no send(text) and is not "
                "callable"
            )
        return PythonSession(bot, environment, self.limits)


class _ReplyFunction:
    """A function `text -> str | list[str] | Reply` (sync or async) as a bot object."""

    def __init__(self, function: Callable[[str], Any]) -> None:
        self.send = function


def object_name(target: Any) -> str:
    """`module.qualname` of a function or class (of the object's class for an instance), for the record."""
    named = target if inspect.isfunction(target) or inspect.isclass(target) else None
    named = named or getattr(target, "func", None) or type(target)  # functools.partial names its function
    module = getattr(named, "__module__", None) or "object"
    return f"{module}.{getattr(named, '__qualname__', type(target).__name__)}"


def _required_positional(function: Callable[..., Any]) -> int | None:
    """How many positional arguments `function` needs; None when its signature cannot be read."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty)


def bot_from_object(target: Any) -> PythonBotFactory:
    """A bot given in code, fresh for every conversation:
    - a class, or a function of no arguments: a factory, called once per conversation;
    - a function of one argument (`text -> str | list[str] | Reply`, sync or async): the bot itself;
    - an object with `send(text)` (and optionally `final_state()`): copied for every conversation, so each
      starts from the state it was given in.
    Anything else is a UserError saying which of these to pass."""
    name = object_name(target)
    if inspect.isclass(target):
        _check_bot_class(target, name)
        return PythonBotFactory(name, target)
    if hasattr(target, "send"):
        try:
            copy.deepcopy(target)
        except Exception as exc:
            raise UserError(
                f"bot {name}: the object cannot be copied for each conversation ({type(exc).__name__}: "
                f"{exc}); pass its class or a function that makes one instead"
            ) from exc
        return PythonBotFactory(name, lambda: copy.deepcopy(target))
    if callable(target):
        needed = _required_positional(target)
        if needed == 0:
            return PythonBotFactory(name, target)
        if needed in (None, 1):
            return PythonBotFactory(name, lambda: _ReplyFunction(target))
        raise UserError(
            f"bot {name} takes {needed} arguments; a bot function takes the user's message (text) only"
        )
    raise UserError(
        f"bot {type(target).__name__} is not a bot: pass a function text -> reply, an object with "
        "send(text), a class or factory, or 'module:factory'"
    )


def _check_bot_class(cls: type, name: str) -> None:
    """A class is decided before the run, not refused in every conversation: its instances must have
    send(text) or be callable (a function bot, as `bot=C()` is), and it must be made without arguments."""
    if not (hasattr(cls, "send") or _instances_callable(cls)):
        raise UserError(
            f"bot {name}: its instances have no send(text) and are not callable; give the class a send(text) "
            "method (or __call__(text)), or pass a function text -> reply"
        )
    needs = factory_needs(cls)
    if needs is not None:
        short = cls.__name__
        raise UserError(
            f"bot {name} {needs}: pass an instance (bot={short}(...)), which is copied for each conversation, "
            f"or a function of no arguments that makes one (bot=lambda: {short}(...)), or give every "
            "parameter a default"
        )


def _instances_callable(cls: type) -> bool:
    # Every class is callable itself (type.__call__); its instances are when a class of its own defines it.
    return any("__call__" in vars(base) for base in cls.__mro__ if base is not object)


def python_bot_factory(config: PythonBotConfig, suite: Suite, hub: ModelHub) -> PythonBotFactory:
    """The `python` kind's factory (config/bots/__init__.py registers it)."""
    return PythonBotFactory(config.factory, limits=TurnLimits.of(config))


def callable_bot_factory(config: CallableBotConfig, suite: Suite, hub: ModelHub) -> PythonBotFactory:
    """The `callable` kind has no factory in the suite: the object lives only in the program that ran it."""
    raise UserError(
        f"the bot is {config.describe()}, a Python object given to simulator.run or compare; resume this run "
        "from Python with the same object: simulator.resume(folder, bot=...), or for a matrix made by "
        "compare, bot={bot variant id: ...}"
    )
