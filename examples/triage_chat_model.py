"""A scripted stand-in for a chat model playing the triage bot, served by the fake LLM server (`test:`).

`scenarios/triage-chat/suite.yaml` runs a `chat` bot on `test:examples.triage_chat_model:respond`: every
request carries the bot's system prompt and the conversation so far, and this responder answers the way the
rule-based example bot (`examples.triage_bot`) would, except that the follow-up questions it asks come from
the system prompt, not from the rule table. Its section "Follow-up questions, by complaint" lists them, one
per line:

    - chest: Are you short of breath, or is your breathing difficult?
    - neuro (only if headache): Did the headache come on suddenly, ...?

A question the rule table knows (same text) keeps its red flags; a new one is asked as written, and what
the person answers is read with the complaint's other red flags. So a change to the prompt really changes
the bot: adding a line that asks whether chest pain spreads to the arm fixes the cardiac under-triage, and
deleting a line removes that question. `simulator try` (docs/loop.md) relies on that.

Like the example bot it is a demonstration of the loop, not a medical device and not a model.
"""

from __future__ import annotations

__all__ = ["SECTION", "parse_prompt_questions", "respond", "rules_from_prompt"]

import re
from functools import cache

from examples.triage_bot import TriageBot
from examples.triage_rules import Question, Rules, load_rules
from simulator.testing import FakeCall, FakeReply

SECTION = "## Follow-up questions, by complaint"
_LINE = re.compile(r"^-\s*(?P<complaint>\w+)(?:\s*\(only if (?P<only_if>\w+)\))?\s*:\s*(?P<text>.+?)\s*$")


def parse_prompt_questions(system: str) -> dict[str, list[tuple[str, str | None]]]:
    """complaint -> [(question text, only_if)] in the prompt's order, read from the SECTION's lines."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    inside = False
    for line in system.splitlines():
        if line.startswith("## "):
            inside = line.strip() == SECTION
            continue
        match = _LINE.match(line.strip()) if inside else None
        if match:
            found.setdefault(match["complaint"], []).append((match["text"], match["only_if"]))
    return found


@cache
def rules_from_prompt(system: str) -> Rules:
    """The example bot's rule table with each complaint's questions replaced by the prompt's list."""
    rules = load_rules()
    listed = parse_prompt_questions(system)
    known = {q.text: q for c in (*rules.complaints, rules.general) for q in c.questions}
    known.update({q.text: q for q in rules.questions.values()})
    complaints = []
    for complaint in rules.complaints:
        wanted = listed.get(complaint.name, [])
        questions = tuple(
            known.get(text) or Question(key=f"{complaint.name}_{i}", text=text, only_if=only_if)  # type: ignore[arg-type]
            for i, (text, only_if) in enumerate(wanted)
        )
        complaints.append(complaint.model_copy(update={"questions": questions}))
    return rules.model_copy(update={"complaints": tuple(complaints)})


def respond(call: FakeCall) -> FakeReply:
    """Replay the user's messages through the bot built from the system prompt; answer its last reply,
    with the decision tool's call once a triage level is decided."""
    bot = TriageBot(rules_from_prompt(call.system or ""))
    reply: list[str] = []
    for message in call.messages:
        if message.role == "user":
            reply = bot.send(message.content)
    state = bot.final_state()
    tool = next((t["name"] for t in call.tools), None)
    decided = None if state is None or tool is None else (tool, {"triage_level": state["triage_level"]})
    return FakeReply(text="\n\n".join(reply), tool_call=decided)
