"""Responders for the `test:` provider used by tests/test_loop*.py: a scripted judge, proposal writers.

Named in suites and on the command line as `test:tests.loop_support:NAME`.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from simulator.testing import FakeCall, FakeReply
from simulator.testing.fake_judges import JudgeCall, ScriptedJudge

REPO = Path(__file__).resolve().parent.parent
KEYWORDS = {"asks-spread": "spread", "asks-puffs": "puffs"}


def _decide(call: JudgeCall) -> str:
    """A criterion passes when some bot message holds its keyword (the bot asked about it)."""
    word = KEYWORDS.get(call.criterion_id)
    if word is None:
        return "not_applicable"
    return "pass" if any(word in text.lower() for who, text in call.messages if who == "bot") else "fail"


judge = ScriptedJudge(_decide)


def good_proposal(call: FakeCall) -> FakeReply:
    """A well-formed change that adds the chest question after the breathing one."""
    anchor = "- chest: Are you short of breath, or is your breathing difficult?"
    return FakeReply(
        text=json.dumps(
            {
                "kind": "prompt_edit",
                "summary": "Ask whether the chest pain spreads.",
                "edits": [
                    {"find": anchor, "replace": anchor + "\n- chest: Does the pain spread to your arm?"}
                ],
                "evidence": [1],
                "at_risk": [{"criterion": "asks-age", "why": "one more question"}],
                "rationale": "The bot never asked.",
            }
        )
    )


def not_json(call: FakeCall) -> FakeReply:
    return FakeReply(text="Sure! I think the bot should ask more questions.")


def wrong_find(call: FakeCall) -> FakeReply:
    """Schema-valid, but the passage to replace is not in the prompt."""
    return FakeReply(
        text=json.dumps(
            {
                "kind": "prompt_edit",
                "summary": "Ask more.",
                "edits": [{"find": "NOT IN THE PROMPT", "replace": "x"}],
            }
        )
    )


CRITERIA = """\
- id: asks-spread
  criterion: For chest pain the bot asks whether the pain spreads.
  pass: it asked.
  fail: it did not.
  applies_to: [cardiac]
  severity: critical
  category: omission
- id: asks-puffs
  criterion: For asthma the bot asks how many puffs of the reliever were taken.
  pass: it asked.
  fail: it did not.
  applies_to: [respiratory]
  severity: critical
  category: omission
"""


def chat_suite(folder: Path, runs: int = 1, judged: bool = False) -> Path:
    """A copy of scenarios/triage-chat in `folder` (its own prompt file), on the repo's scenarios."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "scenarios/triage-chat/prompt.md", folder / "prompt.md")
    shutil.copytree(
        REPO / "scenarios/triage",
        folder / "scenarios",
        ignore=shutil.ignore_patterns("suite.yaml", "factors", "redteam"),
    )
    judges = f"{REPO / 'judges/triage'}"
    judge_model = "null"
    if judged:
        (folder / "judges").mkdir()
        (folder / "judges/keywords.yaml").write_text(CRITERIA, encoding="utf-8")
        judges, judge_model = str(folder / "judges"), "test:tests.loop_support:judge"
    (folder / "suite.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: triage-chat-test
            scenarios: {{paths: [scenarios]}}
            bot:
              type: chat
              model: "test:examples.triage_chat_model:respond"
              system_prompt_file: prompt.md
              decision_tool: {{name: record_triage, field: triage_level,
                              description: Record the triage level once you have decided it.,
                              values: [self_care, gp, urgent, emergency]}}
            user: {{model: offline, vocabulary: {REPO / "examples/triage_vocabulary.yaml"}}}
            judges: {{paths: ["{judges}"], model: {judge_model}}}
            runs: {runs}
            concurrency: 8
            seed: 0
            outcome: {{key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}}
            """
        ),
        encoding="utf-8",
    )
    return folder / "suite.yaml"


def tool_change(call: FakeCall) -> FakeReply:
    """A change of the decision tool's description (the chat suite's `record_triage`)."""
    find = "Record the triage level once you have decided it."
    return FakeReply(
        text=json.dumps(
            {
                "kind": "tool_description",
                "summary": "Say when to record emergency.",
                "edits": [
                    {"find": find, "replace": find + " Record emergency for chest pain spreading to the arm."}
                ],
            }
        )
    )
