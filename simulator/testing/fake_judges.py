"""Fake judges of known behaviour for the fake LLM server: scripted answers, flips at a known rate, juries.

A `ScriptedJudge` reads the judge request our prompt builds (transcript messages, criterion id, whether
it is a points item, the model asked) and answers with whatever its `decide` function returns, as valid
JSON with a quote copied from the transcript. `flipping` wraps a decision so that each call, independently,
answers the opposite with a known probability: a judge that is unstable at a known rate.
"""

from __future__ import annotations

__all__ = ["JudgeCall", "ScriptedJudge", "expected_flip_share", "flipping"]

import hashlib
import html
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from simulator.testing.fake_llm_behaviour import FakeCall, FakeReply

_MESSAGE = re.compile(r'<message index="\d+" speaker="(\w+)">\n(.*?)\n</message>', re.DOTALL)
_CRITERION = re.compile(r'<criterion id="([^"]+)">(.*?)</criterion>', re.DOTALL)
_OPPOSITE = {"pass": "fail", "fail": "pass", "met": "not_met", "not_met": "met"}


@dataclass(frozen=True)
class JudgeCall:
    """What a fake judge sees of one request."""

    model: str
    criterion_id: str
    points: bool  # the met / not met variant
    messages: list[tuple[str, str]]  # (speaker, text), unescaped
    occurrence: int  # how many identical requests came before this one (samples of one item)
    key: str  # a digest of the request's content


Decide = Callable[[JudgeCall], str]


def _unit(text: str) -> float:
    """A number in [0, 1) from a hash: the same text always gives the same number."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") / 2**64


@dataclass
class ScriptedJudge:
    """A responder that answers each judge request with `decide(call)`: pass / fail / not_applicable,
    or met / not_met / not_applicable for points items (pass and fail are translated for them)."""

    decide: Decide
    seen: Counter[str] = field(default_factory=Counter)

    def __call__(self, call: FakeCall) -> FakeReply:
        text = "\n".join(m.content for m in call.messages)
        found = _CRITERION.search(text)
        criterion_id = found.group(1) if found else ""
        points = bool(found and "Rubric item (met or not met)" in found.group(2))
        messages = [(s, html.unescape(t)) for s, t in _MESSAGE.findall(text)]
        key = hashlib.blake2b(f"{call.model}\n{call.system}\n{text}".encode(), digest_size=12).hexdigest()
        occurrence = self.seen[key]
        self.seen[key] += 1
        result = self.decide(JudgeCall(call.model, criterion_id, points, messages, occurrence, key))
        if points:
            result = {"pass": "met", "fail": "not_met"}.get(result, result)
        quote = next((t for s, t in messages if s == "bot"), messages[0][1] if messages else "")
        evidence = [] if result in ("not_applicable", "not_met") else [quote]
        answer = {"reasoning": f"Scripted answer {result}.", "evidence": evidence, "result": result}
        return FakeReply(text=json.dumps(answer))


def flipping(decide: Decide, rate: float, seed: int = 0) -> Decide:
    """`decide`, except that each call answers the opposite with probability `rate` (drawn from a hash of
    the request and its occurrence, so a run is reproducible whatever order the calls arrive in)."""

    def flipped(call: JudgeCall) -> str:
        result = decide(call)
        if result in _OPPOSITE and _unit(f"{seed}:{call.key}:{call.occurrence}") < rate:
            return _OPPOSITE[result]
        return result

    return flipped


def expected_flip_share(rate: float, samples: int) -> float:
    """The share of items whose `samples` answers disagree when each flips independently with `rate`."""
    return 1 - (1 - rate) ** samples - rate**samples
