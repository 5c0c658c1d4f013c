"""Two simulated patients of known behaviour, for trying several simulated users without a key: served by
the `test:` provider (the project's fake LLM server behind the real OpenAI SDK) as LLM users, named in a
suite as `test:examples.simulated_patients:denier` and `test:examples.simulated_patients:over_sharer`.

- `denier` opens with the persona's first fact, then answers "no" to every question: a simulator that
  hides red flags, as a badly prompted LLM patient can. Failures seen under it alone are its doing.
- `over_sharer` opens with the first fact and answers every question with all the other facts: a
  simulator that volunteers what a real patient would keep back, and so hides the bot's failures to ask.

The triage-simulators demo (scenarios/triage-simulators/suite.yaml, docs/simulators.md) runs both beside
the offline user. They read the persona's facts from the user prompt (simulator/users/prompt.py).
"""

from __future__ import annotations

__all__ = ["denier", "over_sharer"]

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
    """Opens with the first fact, then answers every question "no"; ends once the bot gives advice."""
    said = _bot_said(call)
    if not said:
        return FakeReply(text=_facts(call)[0])
    if "?" not in said[-1]:
        return FakeReply(text=END)
    return FakeReply(text="no")


def over_sharer(call: FakeCall) -> FakeReply:
    """Opens with the first fact, then answers each question with every other fact at once."""
    said = _bot_said(call)
    facts = _facts(call)
    if not said:
        return FakeReply(text=facts[0])
    if "?" not in said[-1]:
        return FakeReply(text=END)
    return FakeReply(text=" ".join(facts[1:]) or "no")
