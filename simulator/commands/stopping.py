"""Ctrl-C and `kill` stop a command cleanly, however the process was started.

A job started with `&` inherits SIGINT as ignored, and Python then installs no KeyboardInterrupt handler:
`kill -INT` did nothing. So the command line installs its own handlers for SIGINT and SIGTERM for the life of
the command: both take the path Ctrl-C takes (the event loop cancels the run, which keeps what finished and
marks the run interrupted), and the exit code says which signal it was (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

__all__ = ["stop_signals"]

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType


@dataclass
class StopSignals:
    """Which stop signal arrived (None: none did, or a plain KeyboardInterrupt)."""

    received: int | None = None

    @property
    def exit_code(self) -> int:
        return 128 + (self.received or signal.SIGINT)


@contextmanager
def stop_signals() -> Iterator[StopSignals]:
    """Install SIGINT and SIGTERM handlers that raise KeyboardInterrupt (asyncio turns SIGINT into a
    cancellation of the run); the previous handlers are put back afterwards."""
    state = StopSignals()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def on_term(signum: int, frame: FrameType | None) -> None:
        state.received = signum
        # The path Ctrl-C takes: asyncio's own SIGINT handler when a loop runs, else KeyboardInterrupt.
        signal.raise_signal(signal.SIGINT)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # asyncio.Runner installs its cancelling handler only over the default one: so SIGINT gets exactly
    # that, even when it was inherited as ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_term)
    try:
        yield state
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
