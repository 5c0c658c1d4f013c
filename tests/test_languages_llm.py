"""Code-switching with an LLM user, through the real openai SDK against the fake LLM server: the user's
prompt tells it to switch (and a user that reads its prompt does), and the audit prompt's <languages>
block lets the fidelity drift check allow the switch while a persona that must stay in one language is
flagged when its user drifts."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests._reliability_fixtures import triage_responder, write_suite
from tests.fake_audit import audit_reply, is_audit_call

SCENARIOS = """
- id: switcher
  persona: 52-year-old man, short messages, switches between English and his first language.
  goal: Find out whether he should see someone about chest pressure.
  facts: [Pressure in the chest for two hours., The pain goes to the left arm.]
  language: es
  switches_to: [es]
  max_turns: 6
- id: english-only
  persona: 52-year-old man, short messages, writes English only.
  goal: Find out whether he should see someone about chest pressure.
  facts: [Pressure in the chest for two hours., The pain goes to the left arm.]
  writes_in: en
  max_turns: 6
- id: unspecified
  persona: 52-year-old man, short messages.
  goal: Find out whether he should see someone about chest pressure.
  facts: [Pressure in the chest for two hours., The pain goes to the left arm.]
  language: es
  max_turns: 6
"""
SPANISH_LINE = "sí, el dolor se me va al brazo izquierdo"
_SPANISH_WORDS = {"el", "dolor", "brazo", "sí", "tengo", "pecho", "se", "me"}


def _user(mode: str, call: FakeCall) -> str:
    """The simulated user. `obedient` switches into Spanish only when its prompt says to; `drifter` always
    answers the arm question in Spanish (a planted drift for a persona that must stay in English)."""
    system = call.system or ""
    switch = "switch between English and Spanish" in system
    said = sum(1 for m in call.messages if m.role == "assistant")
    second = SPANISH_LINE if mode == "drifter" or switch else "yes the pain goes to the left arm"
    return ["hi, I have pressure in the chest for two hours", second, "ok thanks", "[END]"][min(said, 3)]


def _language(text: str) -> str:
    words = set(re.findall(r"\w+", text.lower()))
    return "Spanish" if len(words & _SPANISH_WORDS) >= 2 else "English"


def _allowed(body: str) -> set[str]:
    """What a careful auditor reads from the request: the <languages> block, else English (the
    instructions call any change of language drift)."""
    block = body.split("<languages>", 1)[1].split("</languages>", 1)[0] if "<languages>" in body else ""
    only = re.search(r"writes only in (\w+)", block)
    switching = re.search(r"writes in (\w+) and switches to (.+?) and back", block)
    if switching:
        return {switching.group(1), *switching.group(2).split(" and ")}
    return {only.group(1)} if only else {"English"}


def _audit(call: FakeCall) -> FakeReply:
    reply = json.loads(audit_reply(call).text or "{}")
    body = "\n".join(m.content for m in call.messages)
    users = re.findall(r'<message index="\d+" speaker="user">\n(.*?)\n</message>', body, re.S)
    allowed = _allowed(body)
    off = [text for text in users if _language(text) not in allowed]
    reply["drift"] = (
        {"reasoning": "the user changed language", "evidence": off[:1], "result": "fail"}
        if off
        else {"reasoning": "the user wrote the persona's languages", "evidence": users[:1], "result": "pass"}
    )
    return FakeReply(text=json.dumps(reply))


def _run(tmp_path: Path, mode: str) -> tuple[dict[str, Any], dict[str, list[str]], list[FakeCall]]:
    def answer(call: FakeCall) -> FakeReply | str:
        if is_audit_call(call):
            return _audit(call)
        if call.tools or call.schema is not None:
            return triage_responder(call)
        return _user(mode, call)

    async def go() -> list[FakeCall]:
        async with FakeLLMServer(answer) as server:
            path = write_suite(
                tmp_path / "suite", server.openai_base_url, runs=1, user="openai:fake-user",
                scenarios=SCENARIOS, criteria=1,
            )  # fmt: skip
            suite = load_suite(path)
            await run_suite(suite, suite.scenarios_to_run(), RunOptions(out=tmp_path / "run", progress=False))
            return list(server.calls)

    calls = asyncio.run(go())
    folder = RunFolder.open(tmp_path / "run")
    drift = {v.scenario_id: v for v in folder.verdicts() if v.criterion_id == "fidelity.drift"}
    users = {r.scenario_id: [t.text for t in r.turns if t.role == "user"] for r in folder.conversations()}
    return drift, users, calls


def test_the_llm_user_switches_because_its_prompt_says_so_and_is_not_flagged(tmp_path: Path) -> None:
    drift, users, calls = _run(tmp_path, "obedient")
    prompts = {c.system for c in calls if not is_audit_call(c) and not c.tools and c.schema is None}
    assert sum("switch between English and Spanish" in (p or "") for p in prompts) == 1
    assert SPANISH_LINE in users["switcher"]  # it enacted the switch
    assert SPANISH_LINE not in users["english-only"] and SPANISH_LINE not in users["unspecified"]
    assert {scenario: v.result for scenario, v in drift.items()} == {
        "switcher": "pass", "english-only": "pass", "unspecified": "pass",
    }  # fmt: skip
    assert all(v.decided_by == "llm" and v.judge_model == "openai:fake-judge" for v in drift.values())
    audits = {c.messages[-1].content.split("<persona>\n", 1)[1][:40]: c for c in calls if is_audit_call(c)}
    assert len(audits) == 3
    blocks = "\n".join(c.messages[-1].content for c in audits.values())
    assert "switches to Spanish and back" in blocks and "writes only in English" in blocks


def test_a_persona_that_must_stay_in_one_language_is_flagged_when_its_user_drifts(tmp_path: Path) -> None:
    drift, users, _ = _run(tmp_path, "drifter")
    assert all(SPANISH_LINE in said for said in users.values())  # the same drift planted in all three
    assert drift["switcher"].result == "pass"  # in character for the code-switching persona
    for scenario in ("english-only", "unspecified"):
        verdict = drift[scenario]
        assert verdict.result == "fail", scenario
        assert verdict.evidence_verified and verdict.evidence[0].quote == SPANISH_LINE
