"""Bots and judges for tests/test_length_bias.py: the triage bot padded by a known amount, a pairwise judge
that prefers the longer conversation whenever the lengths differ by more than 10% (length-biased), one that
decides on wording alone (not length-biased), and pointwise judges of the same two kinds.

Judges are named `test:tests.length_support:NAME`; bots `tests.length_support:NAME`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from examples.triage_bot import make_bot
from simulator.testing import FakeCall, FakeReply
from simulator.testing.fake_judges import ScriptedJudge

PAD = 60  # characters of one padding unit
_TRANSCRIPT = re.compile(r'<transcript label="(first|second)">(.*?)</transcript>', re.DOTALL)
_BOT = re.compile(r'<message index="\d+" speaker="bot">\n(.*?)\n</message>', re.DOTALL)
_USER = re.compile(r'<message index="\d+" speaker="user">\n(.*?)\n</message>', re.DOTALL)


class PaddedBot:
    """The triage bot, with `units(first user message)` padding units added to its first reply."""

    def __init__(self, word: str, units: Any) -> None:
        self.inner, self.word, self.units, self.turn = make_bot(), word, units, 0

    def send(self, text: str) -> list[str]:
        reply = list(self.inner.send(text))
        self.turn += 1
        count = self.units(text) if self.turn == 1 else 0
        if count:
            unit = (self.word + " ") * (PAD // (len(self.word) + 1))
            reply.append((unit * count).strip())
        return reply

    def final_state(self) -> dict[str, Any] | None:
        return self.inner.final_state()


def long_bot() -> PaddedBot:
    """Zero to three units, by the opening message: often much longer than `plain_bot`, sometimes not."""
    return PaddedBot("Stay safe.", lambda text: len(text) % 4)


def plain_bot() -> PaddedBot:
    """One unit on some openings, none on others: a little length noise of its own."""
    return PaddedBot("Take care.", lambda text: len(text) % 2)


def _sides(call: FakeCall) -> dict[str, str]:
    return dict(_TRANSCRIPT.findall(call.messages[0].content))


def _bot_chars(transcript: str) -> int:
    return sum(len(m) for m in _BOT.findall(transcript))


def _answer(better: str) -> FakeReply:
    return FakeReply(text=json.dumps({"reasoning": "Scripted comparison.", "better": better}))


def longer_judge(call: FakeCall) -> FakeReply:
    """Length-biased: the longer conversation wins when the lengths differ by more than 10%, else a tie."""
    sides = _sides(call)
    first, second = _bot_chars(sides["first"]), _bot_chars(sides["second"])
    if max(first, second) > 1.1 * min(first, second):
        return _answer("first" if first > second else "second")
    return _answer("tie")


def wording_judge(call: FakeCall) -> FakeReply:
    """Not length-biased: prefers "Stay safe." on openings of even length, "Take care." on odd ones,
    whichever is longer (a taste for wording, unrelated to length)."""
    sides = _sides(call)
    opening = (_USER.findall(sides["first"]) or [""])[0]
    liked = "Stay safe." if len(opening) % 2 == 0 else "Take care."
    has = {label: liked in text for label, text in sides.items()}
    if has["first"] == has["second"]:
        return _answer("tie")
    return _answer("first" if has["first"] else "second")


def _bot_text(call: Any) -> int:
    return sum(len(text) for who, text in call.messages if who == "bot")


# Pointwise: passes long conversations (length-biased); passes on a word of the opening (not biased).
long_passes = ScriptedJudge(lambda call: "pass" if _bot_text(call) > 700 else "fail")
even_passes = ScriptedJudge(
    lambda call: "pass" if len(next((t for w, t in call.messages if w == "user"), "")) % 3 else "fail"
)
