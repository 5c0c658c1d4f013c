"""Python bots for the matrix tests: one that always sends people home, one that always crashes."""

from __future__ import annotations

from simulator.bots import Reply


class _HomeBot:
    def send(self, text: str) -> Reply:
        return Reply(["Rest at home; it will pass."], closed=True, state={"triage_level": "self_care"})


class _BrokenBot:
    def send(self, text: str) -> str:
        raise RuntimeError("the bot under test crashed")


def make_home_bot() -> _HomeBot:
    return _HomeBot()


def make_broken_bot() -> _BrokenBot:
    return _BrokenBot()
