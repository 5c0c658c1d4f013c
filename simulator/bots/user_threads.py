"""Where blocking user code runs (a python bot's sync `send`, an environment tool's function): in a daemon
thread of its own, so a call that never returns costs one idle thread and never the run.

A thread cannot be stopped from outside, so a deadline only stops *waiting* for it. Python's own pools
(`asyncio.to_thread`, a `ThreadPoolExecutor`) are joined when the event loop shuts down and when the
interpreter exits: one bot stuck in `while True: print(...)` kept `simulator run` from ever exiting after its
last conversation was recorded. A daemon thread is not joined: the run ends, and the thread with it.
"""

from __future__ import annotations

__all__ = ["call_blocking", "in_daemon_thread"]

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _start(function: Callable[[], Any], done: Callable[[BaseException | None, Any], None], name: str) -> None:
    context = contextvars.copy_context()

    def run() -> None:
        try:
            value = context.run(function)
        except BaseException as exc:
            done(exc, None)
        else:
            done(None, value)

    threading.Thread(target=run, name=name, daemon=True).start()


class _Carried(Exception):
    """What user code raised, carried through the future as an ordinary exception. A future's exception
    is thrown into the awaiting task's whole chain of coroutines, and a thrown GeneratorExit closes the
    chain instead of reaching the frame that awaits (CPython's `gen_throw`): a bot's `raise
    GeneratorExit` escaped the engine's handlers and ended the conversation's task. Raised again below,
    in the awaiting frame, it propagates as any exception does."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)
        self.exc = exc


async def in_daemon_thread(function: Callable[[], T], name: str = "simulator-user-code") -> T:
    """`function()` in a daemon thread, awaited; what it raises is raised here (BaseExceptions too)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(exc: BaseException | None, value: Any) -> None:
        if future.done():  # cancelled: the deadline passed, nobody waits any more
            return
        if exc is not None:
            future.set_exception(_Carried(exc))
        else:
            future.set_result(value)

    def done(exc: BaseException | None, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: the answer is nobody's
            loop.call_soon_threadsafe(settle, exc, value)

    _start(function, done, name)
    try:
        return await future
    except _Carried as carried:
        raise carried.exc from None


def call_blocking(function: Callable[[], T], timeout_s: float, name: str = "simulator-tool") -> T:
    """`function()` in a daemon thread, waited for up to `timeout_s` from a blocking caller;
    concurrent.futures.TimeoutError past it (the thread is left to finish on its own)."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def done(exc: BaseException | None, value: Any) -> None:
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(value)

    _start(function, done, name)
    return future.result(timeout=timeout_s)
