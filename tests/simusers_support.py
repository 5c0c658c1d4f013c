"""Simulated users for tests/test_simulators.py, served by the `test:` provider as
`test:tests.simusers_support:NAME`: a patient who denies every warning sign (a simulator that reveals its
facts wrongly), and one who tells the truth, plainly."""

from __future__ import annotations

from simulator.testing import FakeCall, FakeReply
from simulator.users.base import END


def _facts(call: FakeCall) -> list[str]:
    """The persona's facts, read from the user prompt's `Facts you know:` list."""
    system = call.system or ""
    block = system.split("Facts you know:", 1)[1].split("How to behave:", 1)[0]
    return [line.strip()[2:] for line in block.splitlines() if line.strip().startswith("- ")]


def _bot_said(call: FakeCall) -> list[str]:
    return [m.content for m in call.messages[1:] if m.role == "user"]  # the bot is the "user" here


def denier(call: FakeCall) -> FakeReply:
    """Opens with the first fact, then answers every question "no": a simulator that hides red flags."""
    said = _bot_said(call)
    if not said:
        return FakeReply(text=_facts(call)[0])
    if "?" not in said[-1]:
        return FakeReply(text=END)  # the bot gave its advice
    return FakeReply(text="no")


def truthful(call: FakeCall) -> FakeReply:
    """Opens with the first fact, then answers each question with every fact (a very open patient)."""
    said = _bot_said(call)
    facts = _facts(call)
    if not said:
        return FakeReply(text=facts[0])
    if "?" not in said[-1]:
        return FakeReply(text=END)
    return FakeReply(text=" ".join(facts[1:]) or "no")
