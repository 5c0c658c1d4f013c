"""Run a coroutine to completion on the fastest event loop this platform has.

uvloop (libuv, in C) does the event loop's own work and the sockets' reads and writes in a fraction of
asyncio's CPU; at a thousand LLM calls a second that is most of what the engine spends outside the HTTP
client (bench/README.md). Where it is not installed (Windows has no uvloop) the standard loop runs the
same code. `SIMULATOR_EVENT_LOOP=asyncio` picks the standard loop anyway, to rule the loop out when
chasing a problem. `frozen_heap` is the garbage collector's part of the same work: a run's settings, used by
the engine's runner and by the bench's fake server.
"""

from __future__ import annotations

__all__ = ["Abandoned", "apart", "being_cancelled", "frozen_heap", "loop_name", "run_async", "within"]

import asyncio
import contextlib
import gc
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


_LOOPS = ("", "uvloop", "asyncio")


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    chosen = os.environ.get("SIMULATOR_EVENT_LOOP", "").strip().lower()
    if chosen not in _LOOPS:  # a typo would silently run the other loop: the one a problem was chased on
        from simulator.errors import UserError

        raise UserError(
            f"SIMULATOR_EVENT_LOOP={chosen!r}: not a loop this engine runs; set it to asyncio or uvloop, or unset it"
        )
    if chosen == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    """`uvloop` or `asyncio`: the loop `run_async` uses here."""
    return "asyncio" if _loop_factory() is None else "uvloop"


class _Boxed:
    """A task's result behind a plain repr. Python 3.11's `asyncio.Runner.run` ends with
    `signal.getsignal(SIGINT)`, which formats the handler, a partial holding the main task, with `%r`: the
    task's repr shows its result's, and a `Result`'s repr builds the whole report (every record read, numpy
    imported) only to be thrown away. Boxed, the result is never formatted there."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<result>"


async def _boxed(coroutine: Coroutine[Any, Any, T], notes: list[str]) -> _Boxed:
    try:
        return _Boxed(await coroutine)
    except asyncio.CancelledError as exc:
        # What it said on its way out (how to go on), moved to the KeyboardInterrupt `run_async` raises: said
        # once, at the end of Python's report, where the command line says its stop line.
        notes.extend(getattr(exc, "__notes__", ()))
        with contextlib.suppress(AttributeError):
            del exc.__notes__
        raise


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)`, on uvloop when it is available. Stopped by Ctrl-C, it raises
    KeyboardInterrupt as asyncio.run does, carrying the notes the coroutine added to its cancellation on
    its way out (the API's: what is kept, and the call that finishes the run)."""
    try:
        factory = _loop_factory()
    except BaseException:
        coroutine.close()  # never started: closed, so Python does not warn that it was never awaited
        raise
    notes: list[str] = []
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            value: T = runner.run(_boxed(coroutine, notes)).value
            return value
    except KeyboardInterrupt as exc:
        for note in notes:
            exc.add_note(note)
        raise


# Collect the young generation every 20,000 net allocations instead of 700, the older ones as rarely: a
# run's objects are short-lived dicts and models that die before a collection, so the default thresholds
# spend CPU re-scanning the few that live (bench, A/B back to back: about 8% less engine CPU per call).
_RUN_GC_THRESHOLDS = (20_000, 20, 20)


@contextlib.contextmanager
def frozen_heap(enabled: bool) -> Iterator[None]:
    """A long run's garbage-collector settings (start-up heap frozen, rare collections), put back after."""
    # Everything alive now (modules, SDKs, schemas) is moved out of the garbage collector's sight: a run
    # makes millions of short-lived objects, and each full collection would rescan the start-up heap and
    # stall the event loop (bench: 1.19x -> 1.10x the lower bound). No collection first: the little
    # start-up garbage costs less memory than a full collection of the start-up heap costs time.
    # The command line starts with the collector off (nothing to find among imports): on for the run.
    # Unfrozen, and the thresholds and the collector's state put back, when the run ends.
    thresholds, collecting = gc.get_threshold(), gc.isenabled()
    if enabled:
        gc.freeze()
        gc.set_threshold(*_RUN_GC_THRESHOLDS)
        gc.enable()
    try:
        yield
    finally:
        if enabled:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
            if not collecting:
                gc.disable()


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """`await awaitable` for at most `seconds` (TimeoutError past them; None: no limit), in this task.

    Not `asyncio.wait_for`: before Python 3.12 it loses a cancellation that arrives as the awaited thing
    finishes (CPython gh-86296), returning the result instead. A bot turn ends every few milliseconds, so
    under load a stop signal's cancellation regularly landed there: the worker went on pulling work and
    `kill -INT` left the run running (tests/test_stop_signals.py, under load). `asyncio.timeout` keeps it."""
    async with asyncio.timeout(seconds):
        return await awaitable


def being_cancelled() -> bool:
    """True when the running task has been asked to stop (a stop signal, a deadline): a CancelledError it
    meets now is that request. False when nothing cancelled it, so a CancelledError is the doing of the code
    it ran (a bot's `raise asyncio.CancelledError`), to be handled as that code's exception. An
    `asyncio.timeout` that expired within that code and was handled there took its request back
    (`uncancel`), so it does not count."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Abandoned(TimeoutError):
    """Past its deadline, the awaited coroutine did not end when cancelled (it caught the CancelledError and
    went on): it was closed and left."""


def _abandon(task: asyncio.Future[Any], coroutine: Any) -> None:
    """End a task that will not end when cancelled: `close()` its coroutine (a GeneratorExit at the point
    where it waits, which an `except CancelledError` does not catch), then cancel it, so it never keeps
    the loop from closing (asyncio.Runner waits for every task it cancels at exit). What it raised on its
    way out is nobody's. A coroutine that catches GeneratorExit too and waits again cannot be ended."""
    if task.done():
        return
    close = getattr(coroutine, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()
    task.cancel()


def _forget(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # read, so asyncio does not log an answer nobody waits for


async def apart(coroutine: Coroutine[Any, Any, T], seconds: float | None, grace: float) -> T:
    """`await coroutine` for at most `seconds` (None: no limit), in a task of its own (TimeoutError past
    them), for code that may not end when cancelled (a bot's coroutine that catches CancelledError and waits again).

    Past the deadline the task is cancelled and given `grace` seconds to end; one that has not is
    abandoned (`_abandon`) and the TimeoutError is `Abandoned`. When the caller is cancelled (a stop
    signal) the task is cancelled and the caller's CancelledError raised at once; a task that has not
    ended `grace` seconds later is abandoned then. `asyncio.wait` keeps a cancellation that arrives as
    the task finishes (CPython gh-86296, see `within`): it raises it, it never returns the result."""
    task = asyncio.ensure_future(coroutine)
    task.add_done_callback(_forget)
    try:
        await asyncio.wait({task}, timeout=seconds)
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=grace)
            if not task.done():
                _abandon(task, coroutine)
                raise Abandoned
            raise TimeoutError
    except asyncio.CancelledError:
        task.cancel()
        asyncio.get_running_loop().call_later(grace, _abandon, task, coroutine)
        raise
    return task.result()
