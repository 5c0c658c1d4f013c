"""Bots whose true disposition is planted, for tests/test_outcome_sources.py: each scenario's goal names a code
word, and the code word says what the bot tells the patient, what it stores in its state and what it passes
to a `record_disposition` tool call. The truth of every conversation is known before the run.

- `planted`: deterministic, one advice message per conversation (then it closes);
- `stochastic`: advises the planted level, except that with probability P_UNDER (seeded by the opening
  message, so a run is reproducible) it advises one level lower while its state still says the planted one;
  every choice is logged in CHOICES so a test knows the truth of each conversation.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
from typing import Any

from simulator.bots.base import Reply
from simulator.testing import FakeCall, FakeReply

ADVICE = {
    "emergency": "Call 999 now and ask for an ambulance.",
    "urgent": "Contact NHS 111 today for an urgent assessment.",
    "gp": "Book a GP appointment for the next few days. If it gets worse, call 999.",
    "self_care": "Rest and drink fluids: this is self-care.",
    "none": "Thanks for your message. I cannot help with that here.",
}
LEVELS = ["self_care", "gp", "urgent", "emergency"]

# code word -> (what the bot says, what its state says, what its tool call says); None: not given.
PLANTED: dict[str, tuple[str, str | None, str | None]] = {
    "alpha": ("emergency", "emergency", "emergency"),
    "bravo": ("gp", "emergency", "emergency"),  # stored emergency, told the patient to see a GP
    "charlie": ("gp", "gp", "gp"),
    "delta": ("emergency", "gp", "gp"),  # stored gp, told the patient to call 999
    "echo": ("self_care", "self_care", "self_care"),
    "foxtrot": ("urgent", "urgent", None),  # no tool call
    "golf": ("none", None, None),  # advised nothing, stored nothing
}
_CODE = re.compile(r"\b(" + "|".join(PLANTED) + r")\b")

P_UNDER = 0.3
CHOICES: dict[str, str] = {}  # opening message -> the level the stochastic bot advised


def _code(text: str) -> str:
    found = _CODE.search(text.lower())
    if found is None:
        raise ValueError(f"no code word in {text!r}")
    return found.group(1)


def _reply(said: str, state: str | None, tool: str | None) -> Reply:
    parts: list[dict[str, Any]] = [{"type": "text", "text": ADVICE[said]}]
    if tool is not None:
        parts.insert(0, {"type": "tool_call", "name": "record_disposition", "arguments": {"level": tool}})
    return Reply(parts=parts, state={"triage_level": state} if state else None, closed=True)


class PlantedBot:
    """Says, stores and records what its code word plants, in one turn."""

    def send(self, text: str) -> Reply:
        said, state, tool = PLANTED[_code(text)]
        return _reply(said, state, tool)


class StochasticBot:
    """Under-triages in its words (one level lower) with probability P_UNDER, its state unchanged."""

    def send(self, text: str) -> Reply:
        said, state, tool = PLANTED[_code(text)]
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        if said in LEVELS[1:] and random.Random(seed).random() < P_UNDER:
            said = LEVELS[LEVELS.index(said) - 1]
        CHOICES[text] = said
        return _reply(said, state, tool)


def planted() -> PlantedBot:
    return PlantedBot()


def stochastic() -> StochasticBot:
    return StochasticBot()


_BOT = re.compile(r'<message index="\d+" speaker="bot">\n(.*?)\n</message>', re.DOTALL)


def _judge_answer(call: FakeCall, quote_of: Any) -> FakeReply:
    """The level whose advice the bot's last advising message is, quoted by `quote_of(advice)`."""
    said = [html.unescape(m) for m in _BOT.findall(call.messages[0].content)]
    level, quote = "none", ""
    for message in said:
        for name, advice in ADVICE.items():
            if name != "none" and message == advice:
                level, quote = name, quote_of(advice)
    return FakeReply(
        text=json.dumps({"reasoning": "Scripted outcome judge.", "quote": quote, "level": level})
    )


def outcome_judge(call: FakeCall) -> FakeReply:
    """An outcome judge that reads the advice right and quotes its first sentence exactly."""
    return _judge_answer(call, lambda advice: advice.split(".")[0] + ".")


def misquoting_judge(call: FakeCall) -> FakeReply:
    """Names the right level but quotes words the bot never said: its reading must decide nothing."""
    return _judge_answer(call, lambda advice: "Please go straight to the hospital by taxi.")


def broken_judge(call: FakeCall) -> FakeReply:
    """An outcome judge whose every call is refused (a request the API will never accept)."""
    return FakeReply(status=400, error_type="invalid_request_error", text="refused")


BROKEN_DECISIONS = ["{not json", "[1, 2]", '"emergency"', "42", '{"triage_level": ']


def broken_decision(call: FakeCall) -> FakeReply:
    """A chat model that records its decision with arguments that are not JSON text of an object, the
    kind picked by the case's code word (`case-N` in the conversation, N indexing BROKEN_DECISIONS)."""
    said = " ".join(str(m.content) for m in call.messages)
    found = re.search(r"case (\d+)", said)
    arguments = BROKEN_DECISIONS[int(found.group(1)) % len(BROKEN_DECISIONS) if found else 0]
    return FakeReply(
        text="Please go to the emergency department now.", tool_call=("record_triage", arguments)
    )
