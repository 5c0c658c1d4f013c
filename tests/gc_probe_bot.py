"""A python bot that notes, at every reply, whether the garbage collector is on (tests/test_startup.py)."""

from __future__ import annotations

import gc
from typing import Any

from examples.triage_bot import make_bot as triage

SEEN: list[bool] = []  # gc.isenabled() at each reply, in this process


class ProbeBot:
    def __init__(self) -> None:
        self.bot = triage()

    def send(self, text: str) -> Any:
        SEEN.append(gc.isenabled())
        return self.bot.send(text)

    def final_state(self) -> Any:
        return self.bot.final_state()


def make_bot() -> ProbeBot:
    return ProbeBot()
