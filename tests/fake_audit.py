"""A fake simulated-user auditor for FakeLLMServer: it reads the audit request like a careful model would,
so tests exercise the whole provenance and fidelity path (prompt, structured output, quote checks).

A fact is elicited when a user message contains its text and the message before it is a bot question,
volunteered when the user said it unasked, missed otherwise. `invented_facts` fails on a user message
containing any of `invented` (phrases a test plants); the other checks pass, quoting the first user message.
"""

from __future__ import annotations

__all__ = ["audit_reply", "is_audit_call"]

import html
import json
import re
from collections.abc import Sequence

from simulator.judging.fidelity_prompt import AUDIT_INSTRUCTIONS
from simulator.testing.fake_llm_behaviour import FakeCall, FakeReply

_MESSAGE = re.compile(r'<message index="\d+" speaker="(user|bot)">\n(.*?)\n</message>', re.S)
_FACT = re.compile(r"^(\d+)\. (.*)$", re.M)


def is_audit_call(call: FakeCall) -> bool:
    """True for the simulated-user audit request (its system prompt is the audit instructions)."""
    return (call.system or "").startswith(AUDIT_INSTRUCTIONS[:60])


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def audit_reply(call: FakeCall, invented: Sequence[str] = ()) -> FakeReply:
    """The audit answer for one request, as JSON text."""
    body = "\n".join(m.content for m in call.messages)
    messages = [(who, html.unescape(text)) for who, text in _MESSAGE.findall(body)]
    facts_block = body.split("<facts>", 1)[-1].split("</facts>", 1)[0]
    facts = []
    for number, text in _FACT.findall(facts_block):
        key = _norm(html.unescape(text)).split()
        status, user_quote, bot_quote = "missed", "", ""
        for position, (who, said) in enumerate(messages):
            if who == "user" and key and " ".join(key[:4]) in _norm(said):
                before = messages[position - 1] if position else None
                asked = before is not None and before[0] == "bot" and before[1].rstrip().endswith("?")
                status = "elicited" if asked else "volunteered"
                user_quote, bot_quote = said, before[1] if asked and before else ""
                break
        facts.append(
            {"fact": int(number), "status": status, "user_quote": user_quote, "bot_quote": bot_quote}
        )
    users = [said for who, said in messages if who == "user"]
    first = users[:1]

    def passed(what: str) -> dict[str, object]:
        return {"reasoning": f"no {what} seen", "evidence": first, "result": "pass"}

    planted = [said for said in users if any(p.lower() in said.lower() for p in invented)]
    checks = {
        "invented_facts": {
            "reasoning": "the user stated a fact not in the scenario",
            "evidence": planted[:1],
            "result": "fail",
        }
        if planted
        else passed("invented fact"),
        "role_confusion": passed("role confusion"),
        "drift": passed("drift"),
    }
    return FakeReply(text=json.dumps({"facts": facts, **checks}))
