"""A rich progress bar with counts, ETA and live stop-reason tallies (silent when disabled).

`rich` is imported only when the bar is shown: a run without one (`--no-progress`, a script) does not pay
for it at start-up."""

from __future__ import annotations

__all__ = ["RunProgress"]

import sys
from collections import Counter
from types import TracebackType
from typing import Any

from simulator.visible import echo, terminal_console


class RunProgress:
    def __init__(self, total: int, enabled: bool = True) -> None:
        self.tallies: Counter[str] = Counter()
        self._enabled = enabled and total > 0
        self._progress: Any = None
        self.waiting_text: str | None = None
        if not self._enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("[bold]conversations"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            # The tallies and the wait name stop reasons and a provider's limit: text, never markup.
            TextColumn("{task.fields[tallies]}", markup=False),
            TextColumn("{task.fields[waiting]}", style="yellow", markup=False),
            console=terminal_console(stderr=True),
        )
        self._task = self._progress.add_task("run", total=total, tallies="", waiting="")

    def advance(self, stop_reason: str) -> None:
        self.tallies[stop_reason] += 1
        if self._progress is None:
            return
        text = " ".join(f"{reason}={count}" for reason, count in sorted(self.tallies.items()))
        self._progress.update(self._task, advance=1, tallies=text)

    def waiting(self, text: str | None) -> None:
        """Say on the bar that calls wait for a provider's rate limit (and at what rate), so a slow run
        is not taken for a hang; None clears it."""
        if text != self.waiting_text:
            self.waiting_text = text
            if self._progress is not None:  # --no-progress: nothing to update
                self._progress.update(self._task, waiting=text or "")

    def note(self, message: str) -> None:
        """A line above the bar (e.g. a remote worker that died); printed even without a bar."""
        if self._progress is None:
            echo(message, file=sys.stderr, flush=True)
        else:
            self._progress.console.print(message, markup=False)

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, value, tb)
