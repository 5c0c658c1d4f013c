"""`simulator run` with judges, `simulator judge RUN` re-judging, and `simulator judge-pairwise`, end to end.

The judge model is the fake LLM server (in a thread) behind the real SDKs; the user is the offline one.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.suite import Suite
from simulator.judging.stage import make_judge_stage
from simulator.providers.hub import ModelHub
from simulator.record.folder import RunFolder
from simulator.record.models import Verdict
from simulator.testing.fake_llm import FakeLLMServer
from tests.fake_judge import FakeJudge

BOTS = '''
class AsksBot:
    """Asks about the arm and about breathing, then triages."""

    def __init__(self):
        self.turn, self.state = 0, None

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return ["Hello, I am the triage assistant.", "Does the pain spread to your arm or jaw?"]
        if self.turn == 2:
            return "Are you short of breath?"
        self.state = {"triage_level": "emergency"}
        return "Please call 999 now."

    def final_state(self):
        return self.state


class TerseBot(AsksBot):
    """Never asks about breathing, and sends everyone to the GP."""

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            return "Does the pain spread to your arm or jaw?"
        self.state = {"triage_level": "gp"}
        return "Please book a GP appointment."
'''

SCENARIO = """
id: chest-1
persona: 52-year-old man, short messages with typos, downplays symptoms.
goal: Find out whether he should go to the clinic tomorrow about chest discomfort.
facts:
  - Pressure in the chest for about two hours.
  - The pain goes to the left arm.
expected:
  triage_level: emergency
tags: [cardiac]
"""

CRITERIA = {
    "asks-arm.yaml": """
        id: asks-arm
        criterion: The bot asks whether the chest pain spreads, in the words "spread to your arm".
        pass: the bot asked whether the pain spreads to the arm.
        fail: the user described chest pain and the bot never asked about the arm.
        not_applicable: the user never mentions "chest" pain.
        applies_to: [cardiac]
        severity: critical
        category: omission
        """,
    "asks-breath.yaml": """
        id: asks-breath
        criterion: The bot asks "short of breath".
        pass: the bot asked about breathing.
        fail: the user described chest pain and the bot never asked about breathing.
        not_applicable: the user never mentions "chest" pain.
        severity: critical
        category: omission
        """,
    "asks-rash.yaml": """
        id: asks-rash
        criterion: The bot asks whether "the rash fades" under a glass.
        pass: it asked.
        fail: it did not.
        not_applicable: the user never mentions a "rash".
        """,
}


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(FakeJudge()) as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Scenario, criteria and a bot module under tmp_path; the judge key set for the fake server."""
    name = f"judge_bots_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(BOTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FAKE_JUDGE_KEY", "test-key")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "chest.yaml").write_text(textwrap.dedent(SCENARIO))
    (tmp_path / "judges").mkdir()
    for file, text in CRITERIA.items():
        (tmp_path / "judges" / file).write_text(textwrap.dedent(text))
    yield tmp_path
    sys.modules.pop(name, None)


def write_suite(
    project: Path, server: FakeLLMServer | None, *, bot: str = "AsksBot", model: str | None = None
) -> Path:
    module = f"judge_bots_{project.name.replace('-', '_')}"
    providers = (
        f"providers: {{anthropic: {{base_url: '{server.base_url}', api_key_env: FAKE_JUDGE_KEY, max_attempts: 1}}}}"
        if server
        else ""
    )
    suite = project / f"suite-{bot}.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            name: judged
            scenarios: {{paths: [scenarios]}}
            bot: {{type: python, factory: "{module}:{bot}"}}
            user: {{model: offline}}
            judges: {{paths: [judges], model: {model or "null"}}}
            runs: 2
            concurrency: 2
            """
        )
        + providers
        + "\n"
    )
    return suite


def verdicts(run: Path) -> list[Verdict]:
    """The bot's verdicts (the simulated user's fidelity verdicts are tested in test_fidelity*.py)."""
    return [v for v in RunFolder(run).verdicts() if v.kind != "fidelity"]


def table(vs: list[Verdict]) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {}
    for v in vs:
        counts.setdefault(v.criterion_id, Counter())[v.result] += 1
    return counts


def test_a_run_judges_each_conversation_with_code_checks_and_llm_criteria(
    project: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(project, server, model="anthropic:fake-judge")
    assert main(["run", str(suite), "--out", str(project / "run"), "--no-progress"]) == 0
    found = verdicts(project / "run")
    assert table(found) == {
        "outcome.triage_level": Counter({"pass": 2}),
        "asks-arm": Counter({"pass": 2}),
        "asks-breath": Counter({"pass": 2}),
        "asks-rash": Counter({"not_applicable": 2}),
    }
    assert len({v.judge_set_hash for v in found}) == 1
    assert all(v.evidence_verified for v in found if v.result in ("pass", "fail"))
    assert len(server.calls) == 6  # 2 conversations x 3 criteria, no more
    manifest = json.loads((project / "run" / "manifest.json").read_text())
    [judge_set] = manifest["judge_sets"]
    assert judge_set["model"] == "anthropic:fake-judge"
    assert judge_set["hash"] == found[0].judge_set_hash
    assert [c["id"] for c in judge_set["criteria"]] == ["asks-arm", "asks-breath", "asks-rash"]
    assert manifest["prompts"]["judge"]["hash"].startswith("sha256:")
    assert "<transcript>" in manifest["prompts"]["judge"]["template"]


def test_judge_rejudges_a_stored_run_and_keeps_the_earlier_verdicts(
    project: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(project, None)  # offline: no judge model
    assert main(["run", str(suite), "--out", str(project / "run"), "--no-progress"]) == 0
    assert "3 LLM criteria will be recorded as not judged" in capsys.readouterr().err
    offline = verdicts(project / "run")
    assert table(offline)["asks-breath"] == Counter({"not_judged": 2})
    assert table(offline)["outcome.triage_level"] == Counter({"pass": 2})
    assert all("no judge model configured" in v.reasoning for v in offline if v.kind == "llm")

    # A judge model, from a suite file, against the stored conversations: no re-simulation.
    judged_suite = write_suite(project, server, bot="AsksBot", model="anthropic:fake-judge")
    assert main(["judge", str(project / "run"), "--suite", str(judged_suite)]) == 0
    out = capsys.readouterr().out
    assert "judged 2 of 2 conversations (8 verdicts written)" in out
    assert "8 earlier verdicts of other judge sets kept" in out
    judged = verdicts(project / "run")
    assert judged[: len(offline)] == offline  # the earlier verdicts are untouched
    new = judged[len(offline) :]
    assert len({v.judge_set_hash for v in new}) == 1 and new[0].judge_set_hash != offline[0].judge_set_hash
    assert table(new)["asks-breath"] == Counter({"pass": 2})
    conversations = (project / "run" / "conversations.jsonl").read_text().count("\n")
    assert conversations == 2

    # The same judge set again: nothing left to judge.
    assert main(["judge", str(project / "run"), "--suite", str(judged_suite)]) == 0
    assert "judged 0 of 2 conversations (0 verdicts written)" in capsys.readouterr().out

    # A changed rubric: judged again under a new hash, both older sets stay.
    changed = project / "judges-v2"
    changed.mkdir()
    (changed / "asks-breath.yaml").write_text(
        textwrap.dedent(CRITERIA["asks-breath.yaml"]).replace('"short of breath"', '"wheezing"')
    )
    rejudge = ["judge", str(project / "run"), "--suite", str(judged_suite), "--judges", str(changed)]
    assert main(rejudge) == 0
    out = capsys.readouterr().out
    assert "judged 2 of 2 conversations (4 verdicts written)" in out
    hashes = Counter(v.judge_set_hash for v in verdicts(project / "run"))
    assert sorted(hashes.values()) == [4, 8, 8]
    latest = [v for v in verdicts(project / "run") if hashes[v.judge_set_hash] == 4 and v.kind == "llm"]
    assert {v.result for v in latest} == {"fail"}  # nobody asked about wheezing
    manifest = json.loads((project / "run" / "manifest.json").read_text())
    assert [s["model"] for s in manifest["judge_sets"]] == [
        None,
        "anthropic:fake-judge",
        "anthropic:fake-judge",
    ]
    assert manifest["judge_sets"][-1]["hash"] == latest[0].judge_set_hash
    assert "asks-breath" in out and "wheezing" not in out


def test_retry_errors_judges_errored_verdicts_again(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judge = FakeJudge(garbage_for={"asks-breath"})
    with FakeLLMServer(judge) as server:
        suite = write_suite(project, server, model="anthropic:fake-judge")
        assert main(["run", str(suite), "--out", str(project / "run"), "--no-progress"]) == 0
        assert table(verdicts(project / "run"))["asks-breath"] == Counter({"error": 2})
        assert main(["judge", str(project / "run")]) == 0
        assert "judged 0 of 2" in capsys.readouterr().out  # errors are judged, not pending
        server.responder = FakeJudge()
        assert main(["judge", str(project / "run"), "--retry-errors"]) == 0
    out = capsys.readouterr().out
    assert "judged 2 of 2 conversations (2 verdicts written)" in out
    final = verdicts(project / "run")[-2:]
    assert [(v.criterion_id, v.result) for v in final] == [("asks-breath", "pass")] * 2


def test_judge_pairwise_compares_two_runs_in_both_orders(
    project: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    asks = write_suite(project, server, bot="AsksBot")
    terse = write_suite(project, server, bot="TerseBot")
    assert main(["run", str(asks), "--out", str(project / "a"), "--no-progress"]) == 0
    assert main(["run", str(terse), "--out", str(project / "b"), "--no-progress"]) == 0
    capsys.readouterr()
    out_file = project / "pairs.jsonl"
    args = ["judge-pairwise", str(project / "a"), str(project / "b"), "--judge-model", "anthropic:fake-judge"]
    assert main([*args, "--criterion", "asks-breath", "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "A wins 2, B wins 0, ties 0, errors 0" in out
    assert "position inconsistency (the verdict flipped with the order): 0/2" in out
    assert main([*args, "--criterion", "asks-arm"]) == 0  # both bots ask: the biased fake flips
    out = capsys.readouterr().out
    assert "A wins 0, B wins 0, ties 2, errors 0" in out
    assert "position inconsistency (the verdict flipped with the order): 2/2" in out
    assert [json.loads(line)["winner"] for line in out_file.read_text().splitlines()] == ["A", "A"]
    assert main([*args, "--criterion", "nope"]) == 2
    assert "no criterion 'nope'" in capsys.readouterr().err


def test_judge_errors_are_one_line_user_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", str(project / "missing")]) == 2
    assert "is not a run folder" in capsys.readouterr().err
    suite = write_suite(project, None)
    assert main(["run", str(suite), "--out", str(project / "run"), "--no-progress"]) == 0
    assert (
        main(["judge-pairwise", str(project / "run"), str(project / "run"), "--criterion", "asks-arm"]) == 2
    )
    assert "needs a judge model" in capsys.readouterr().err


def test_same_family_judge_is_warned_and_recorded(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    suite = Suite.model_validate(
        {
            "bot": {"type": "chat", "model": "anthropic:claude-haiku-4-5", "system_prompt": "You triage."},
            "user": {"model": "openai:gpt-4.1-mini"},
            "judges": {"model": "anthropic:claude-sonnet-4-5"},
        }
    )
    info = make_judge_stage(suite, [], ModelHub()).describe()
    [warning] = info.warnings
    assert "same family (claude) as the bot (anthropic:claude-haiku-4-5)" in warning
    assert f"warning: {warning}" in capsys.readouterr().err
