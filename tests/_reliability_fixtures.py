"""Shared by the reliability, resume and cache tests: a triage chat bot served by the fake LLM server."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simulator.record.folder import CONVERSATIONS, VERDICTS
from simulator.record.models import ConversationRecord, Verdict
from simulator.testing.fake_llm import FakeCall, FakeReply, default_responder

SCENARIOS = """
- id: chest
  persona: 52-year-old man, short messages, downplays symptoms.
  goal: Find out whether he should see someone about chest pressure.
  facts: [Pressure in the chest for two hours., The pain goes to the left arm., He is 52.]
  expected: {triage_level: emergency}
  max_turns: 6
- id: rash
  persona: A parent writing about their child.
  goal: Ask what to do about a rash on the child's legs.
  facts: [The rash appeared this morning., The child is 4 years old.]
  expected: {triage_level: gp}
  max_turns: 6
- id: cough
  persona: A student with a cough.
  goal: Find out whether a week-long cough needs a doctor.
  facts: [The cough started a week ago., No fever.]
  expected: {triage_level: gp}
  max_turns: 6
"""


# The simulated user's fidelity checks: one verdict each per conversation, like the bot's criteria.
FIDELITY = (
    "fidelity.invented_facts",
    "fidelity.early_reveal",
    "fidelity.premature_end",
    "fidelity.role_confusion",
    "fidelity.drift",
)


def triage_responder(call: FakeCall) -> FakeReply | str:
    """The bot under test (a chat model): two questions, then a decision by tool call; deterministic.
    Judges (asked for a schema) get the fake server's minimal valid answer."""
    if call.schema is not None:
        return default_responder(call)
    if call.tools:
        users = [m.content.lower() for m in call.messages if m.role == "user"]
        if len(users) >= 3:
            level = "emergency" if any("arm" in text for text in users) else "gp"
            return FakeReply(tool_call=("record_decision", {"triage_level": level}))
        if len(users) == 1:
            return "Thanks for writing. How old are you?"
        return "Does the pain or the problem spread to your arm or anywhere else?"
    # The simulated user (roles flipped: its own lines are `assistant`).
    said = sum(1 for m in call.messages if m.role == "assistant")
    goal = next((line for line in (call.system or "").splitlines() if line.startswith("Your goal:")), "")
    return "[END]" if said >= 3 else f"message {said}: {goal.removeprefix('Your goal:').strip()}"


def write_suite(
    folder: Path,
    base_url: str,
    *,
    runs: int = 2,
    concurrency: int = 4,
    user: str = "offline",
    cache: dict[str, Any] | None = None,
    provider: dict[str, Any] | None = None,
    scenarios: str = SCENARIOS,
    criteria: int = 0,
) -> Path:
    """A suite whose chat bot (and, optionally, user) is the fake server at `base_url` (the OpenAI URL)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scenarios.yaml").write_text(textwrap.dedent(scenarios), encoding="utf-8")
    settings = {
        "base_url": base_url,
        "max_connections": 8,
        "timeout_s": 5,
        "max_attempts": 4,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.05,
        **(provider or {}),
    }
    suite = {
        "name": "reliability",
        "scenarios": {"paths": ["scenarios.yaml"]},
        "bot": {
            "type": "chat",
            "model": "openai:fake-bot",
            "system_prompt": "You are a triage nurse.",
            "decision_tool": {"field": "triage_level", "values": ["gp", "emergency"]},
        },
        "user": {"model": user},
        "runs": runs,
        "concurrency": concurrency,
        "record_raw": False,
        "providers": {"openai": settings},
    }
    if cache is not None:
        suite["cache"] = cache
    if criteria:
        (folder / "judges").mkdir(exist_ok=True)
        for index in range(criteria):
            (folder / "judges" / f"c{index}.yaml").write_text(
                f"id: rule-{index}\ncriterion: The bot follows rule {index}.\n"
                f"pass: it did.\nfail: it did not.\n",
                encoding="utf-8",
            )
        suite["judges"] = {"paths": ["judges"], "model": "openai:fake-judge"}
    path = folder / "suite.yaml"
    # JSON is YAML: no quoting surprises.
    path.write_text(json.dumps(suite, indent=2) + "\n", encoding="utf-8")
    return path


def raw_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file as a dict (duplicates kept: the tests count them)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def conversation_ids(folder: Path) -> list[str]:
    return [line["id"] for line in raw_lines(folder / CONVERSATIONS)]


def verdict_keys(folder: Path) -> list[tuple[str, str]]:
    return [(line["conversation_id"], line["criterion_id"]) for line in raw_lines(folder / VERDICTS)]


def outcome(records: Iterable[ConversationRecord], verdicts: Iterable[Verdict]) -> dict[str, Any]:
    """What a run found, per conversation: stop reason, final state, transcript, verdict results."""
    found: dict[str, Any] = {
        r.id: {
            "stop": r.stop_reason,
            "state": r.final_state,
            "turns": [(t.role, t.messages) for t in r.turns],
            "verdicts": {},
        }
        for r in records
    }
    for verdict in verdicts:
        found[verdict.conversation_id]["verdicts"][verdict.criterion_id] = verdict.result
    return found
