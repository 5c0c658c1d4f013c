"""Lone surrogates end to end (issue 11, item 1): from the LLM user, the LLM judge (reasoning and evidence),
the bot's messages, state and errors, through the fake server and the real openai SDK, into every record and
every report format; the run finishes, resumes and reports."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from simulator.testing.fake_llm_behaviour import minimal_instance

BOT = """
class Bot:
    def __init__(self):
        self.turn = 0

    def send(self, text):
        self.turn += 1
        if "crash" in text:
            raise RuntimeError("the bot fell over \\udc80 here")
        if self.turn == 1:
            return ["Hello \\ud800.", "How old are you \\udfff?"]
        return "Call 999 now."

    def final_state(self):
        return {"triage_level\\ud83d": "emergency"}


def make():
    return Bot()
"""

CRITERION = """
id: asks-age
criterion: The bot asks how old the user is.
pass: the bot asked the user's age.
fail: the bot never asked the user's age.
"""


def _responder(call: FakeCall) -> FakeReply:
    if call.schema is not None:  # the judge: surrogates in its reasoning and its evidence
        answer = minimal_instance(call.schema)
        answer.update(
            reasoning="It asked \ud800 the age.", evidence=["How old are you \udfff?"], result="pass"
        )
        return FakeReply(text=json.dumps(answer))
    said = sum(m.role == "assistant" for m in call.messages)  # roles are flipped for the simulated user
    last = call.messages[-1].content if call.messages else ""
    if said >= 2 or "999" in last:
        return FakeReply(text="[END]")
    if "crash" in call.system if call.system else False:
        return FakeReply(text="please crash")
    return FakeReply(text=f"chest hurts \udbff, I am 52 \ud800{'!' * said}")


@pytest.mark.parametrize("crash", [False, True], ids=["bot-ok", "bot-crashes"])
def test_surrogates_from_every_role_survive_records_and_reports(
    tmp_path: Path, crash: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "surrogate_e2e_bot.py").write_text(BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    judges = tmp_path / "judges"
    judges.mkdir()
    (judges / "asks-age.yaml").write_text(CRITERION)
    goal = "Get help, then crash the bot." if crash else "Get help."
    (tmp_path / "s.yaml").write_text(f"id: s1\npersona: A person who types oddly.\ngoal: {goal}\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    with FakeLLMServer(_responder) as server:
        (tmp_path / "suite.yaml").write_text(
            textwrap.dedent(f"""
            scenarios: {{paths: [s.yaml]}}
            bot: {{type: python, factory: "surrogate_e2e_bot:make"}}
            user: {{model: "openai:fake-user"}}
            judges: {{paths: [judges], model: "openai:fake-judge"}}
            providers: {{openai: {{base_url: "{server.openai_base_url}"}}}}
            runs: 2
            """)
        )
        out = tmp_path / "run"
        code = main(["run", str(tmp_path / "suite.yaml"), "--out", str(out), "--no-progress"])
        assert code == (3 if crash else 0)
        assert main(
            ["run", "--resume", str(out), "--no-progress", *(["--retry-errors"] if crash else [])]
        ) in (0, 3)
        assert main(["judge", str(out)]) == 0
    records = list(RunFolder.open(out).conversations())
    assert len({r.id for r in records}) == 2
    if crash:
        assert all(r.error is not None and "\ufffd" in r.error.message for r in records)
    else:
        assert all(r.text_repaired and r.error is None for r in records)
        user_text = [t.text for r in records for t in r.turns if t.role == "user"]
        assert any("\ufffd" in text for text in user_text)
        assert all(r.final_state == {"triage_level\ufffd": "emergency"} for r in records)
        reasons = [v.reasoning for v in RunFolder.open(out).verdicts() if v.criterion_id == "asks-age"]
        assert reasons and all(reason == "It asked \ufffd the age." for reason in reasons)
    argv = ["report", str(out), "--html", str(reports / "r.html"), "--json", str(reports / "r.json")]
    assert main([*argv, "--junit", str(reports / "r.xml"), "--json-transcripts"]) == 0
    assert main(["show", str(out)]) == 0 and main(["show", str(out), "--raw"]) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    for path in [*out.iterdir(), *reports.iterdir()]:
        path.read_bytes().decode("utf-8")  # every file is valid UTF-8
    json.loads((reports / "r.json").read_text())
