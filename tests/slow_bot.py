"""The example triage bot, 50 ms slower per reply: long enough to stop a run half-way in a test."""

from __future__ import annotations

import time
from typing import Any

from examples.triage_bot import make_bot as triage


class SlowBot:
    def __init__(self) -> None:
        self.bot = triage()

    def send(self, text: str) -> Any:
        time.sleep(0.05)
        return self.bot.send(text)

    def final_state(self) -> Any:
        return self.bot.final_state()


def make_bot() -> SlowBot:
    return SlowBot()
