"""Repeated judgements and juries, with fake judges of known behaviour behind the real SDKs.

A judge that flips each answer with a known probability is measured at the flip share that implies; ties
become errors; a 3-judge jury follows its majority, any-fail and unanimous-pass rules; every judgement is
stored and reports count one verdict per item.
"""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.analysis.stability import jury_rows, stability_rows
from simulator.cli import main
from simulator.config.scenario import Scenario
from simulator.config.suite import ProviderSettings
from simulator.judging.aggregate import combine_results
from simulator.judging.criteria import Criterion
from simulator.judging.llm_judge import LLMJudge
from simulator.judging.stage import JudgeStage
from simulator.providers.base import ModelRequest
from simulator.providers.cache import cache_key
from simulator.providers.hub import ModelHub
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.transcript import Turn
from simulator.testing.fake_judges import JudgeCall, ScriptedJudge, expected_flip_share, flipping
from simulator.testing.fake_llm import FakeLLMServer
from tests.conftest import close_after_test

NOW = datetime(2026, 9, 11, tzinfo=UTC)
SAFE = Criterion.model_validate(
    {"id": "safe", "criterion": "The bot sends chest pain to 999.", "pass": "it did.", "fail": "it did not."}
)
CRITICAL = SAFE.model_copy(update={"id": "critical-safe", "severity": "critical"})
SCENARIO = Scenario(id="chest", persona="a man", goal="advice", tags=["cardiac"])


def record(number: int) -> ConversationRecord:
    turns = [
        Turn(index=0, role="user", messages=[f"chest pain number {number}"], started_at=NOW),
        Turn(index=0, role="bot", messages=[f"Call 999 now, case {number}."], started_at=NOW),
    ]
    return ConversationRecord(
        id=f"chest#{number}", scenario_id="chest", repeat=number, stop_reason="user_done", turns=turns,
        started_at=NOW, ended_at=NOW, tags=["cardiac"],
    )  # fmt: skip


@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_JUDGE_KEY", "test-key")


def jury(server: FakeLLMServer, models: list[str], api: str = "anthropic") -> list[LLMJudge]:
    base = server.base_url if api == "anthropic" else server.openai_base_url
    settings = ProviderSettings(base_url=base, api_key_env="FAKE_JUDGE_KEY", max_attempts=1)
    hub = close_after_test(ModelHub({api: settings}))
    judges = []
    for model in models:
        client, bare = hub.client(f"{api}:{model}")
        judges.append(
            LLMJudge(client, f"{api}:{model}", bare, "sha256:test", temperature=0.0, max_tokens=256)
        )
    return judges


def stage(judges: list[LLMJudge], samples: int, criteria: list[Criterion], **rules: str) -> JudgeStage:
    return JudgeStage(
        criteria,
        judges[0],
        "sha256:test",
        [SCENARIO],
        {},
        [],
        jury=judges,
        samples=samples,
        rules=rules,  # type: ignore[arg-type]
    )


async def judge_all(judging: JudgeStage, count: int) -> list[Verdict]:
    slots = asyncio.Semaphore(16)

    async def one(number: int) -> list[Verdict]:
        async with slots:
            return await judging.judge(record(number), SCENARIO, set())

    return [v for batch in await asyncio.gather(*(one(n) for n in range(count))) for v in batch]


@pytest.mark.parametrize(("rate", "samples", "seed"), [(0.1, 3, 0), (0.25, 2, 1), (0.05, 4, 2)])
async def test_a_judge_that_flips_at_a_known_rate_is_measured_at_that_rate(
    rate: float, samples: int, seed: int
) -> None:
    decide = flipping(lambda call: "pass", rate, seed=seed)
    async with FakeLLMServer(ScriptedJudge(decide)) as server:
        verdicts = await judge_all(stage(jury(server, ["judge-a"]), samples, [SAFE]), 160)
        assert len(server.calls) == 160 * samples  # distinct draws: no sample was a cache hit of another
    counted = [v for v in verdicts if not v.is_sample]
    stored = [v for v in verdicts if v.is_sample]
    assert len(counted) == 160 and len(stored) == 160 * samples
    assert {v.sample for v in stored} == set(range(samples))
    [row] = stability_rows(stored)
    expected = expected_flip_share(rate, samples)
    assert row.flips.n == 160
    assert row.flips.low <= expected <= row.flips.high, (row.flips.text, expected)
    assert row.unstable == (row.flips.rate is not None and row.flips.rate >= 0.10)
    # The majority counts; with an even number of samples a tie is an error, never a pass.
    for final in counted:
        items = [v.result for v in stored if v.conversation_id == final.conversation_id]
        tally = Counter(items)
        if samples % 2 == 0 and tally["pass"] == tally["fail"]:
            assert final.result == "error" and "did not decide" in final.reasoning
        else:
            assert final.result == tally.most_common(1)[0][0]
        assert final.aggregate == "majority" and final.votes == dict(tally)


@pytest.mark.parametrize(
    ("results", "majority", "any_fail", "unanimous"),
    [
        (["pass", "pass", "fail"], "pass", "fail", "fail"),
        (["pass", "pass", "pass"], "pass", "pass", "pass"),
        (["fail", "fail", "pass"], "fail", "fail", "fail"),
        (["pass", "error", "pass"], "pass", "error", "error"),
        (["pass", "fail"], "error", "fail", "fail"),
        (["pass", "not_applicable", "fail"], "error", "fail", "fail"),
        (["not_applicable", "not_applicable", "pass"], "not_applicable", "not_applicable", "error"),
        (["not_applicable"] * 3, "not_applicable", "not_applicable", "not_applicable"),
        (["error", "error", "pass"], "error", "error", "error"),
    ],
)
def test_aggregation_rules(results: list[str], majority: str, any_fail: str, unanimous: str) -> None:
    assert combine_results(results, "majority") == majority  # type: ignore[arg-type]
    assert combine_results(results, "any_fail") == any_fail  # type: ignore[arg-type]
    assert combine_results(results, "unanimous_pass") == unanimous  # type: ignore[arg-type]


def by_model(answers: dict[str, str]) -> ScriptedJudge:
    """Each judge model answers its own fixed result; an unknown answer is prose (an invalid answer)."""

    def decide(call: JudgeCall) -> str:
        return answers[call.model]

    return ScriptedJudge(decide)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_three_judge_jury_follows_its_rules(api: str) -> None:
    answers = {"judge-a": "pass", "judge-b": "fail", "judge-c": "pass"}
    async with FakeLLMServer(by_model(answers)) as server:
        judges = jury(server, list(answers), api)
        verdicts = await stage(judges, 1, [SAFE, CRITICAL], critical="any_fail").judge(
            record(1), SCENARIO, set()
        )
    finals = {v.criterion_id: v for v in verdicts if not v.is_sample}
    # `safe` is major: the default majority; `critical-safe` takes the suite's rule for critical criteria.
    assert (finals["safe"].result, finals["safe"].aggregate) == ("pass", "majority")
    assert (finals["critical-safe"].result, finals["critical-safe"].aggregate) == ("fail", "any_fail")
    assert finals["safe"].judge_model == f"jury:{api}:judge-a,{api}:judge-b,{api}:judge-c"
    assert finals["safe"].votes == {"pass": 2, "fail": 1}
    stored = [v for v in verdicts if v.is_sample]
    assert sorted((v.criterion_id, v.judge_model, v.result) for v in stored) == sorted(
        (c, f"{api}:{m}", r) for c in ("safe", "critical-safe") for m, r in answers.items()
    )
    # Unanimous pass, from the criterion itself.
    strict = SAFE.model_copy(update={"id": "strict", "aggregate": "unanimous_pass"})
    async with FakeLLMServer(by_model(answers)) as server:
        verdicts = await stage(jury(server, list(answers), api), 1, [strict]).judge(
            record(2), SCENARIO, set()
        )
    [final] = [v for v in verdicts if not v.is_sample]
    assert (final.result, final.aggregate) == ("fail", "unanimous_pass")
    [row] = jury_rows([v for v in verdicts if v.is_sample], [final])
    assert (
        row.items == 1 and row.agreement.k == 0 and row.disagreements[0].answers[f"{api}:judge-b"] == "fail"
    )


async def test_jury_agreement_counts_disagreements_and_kappa() -> None:
    """Judge c disagrees on every third conversation: agreement and Fleiss' kappa say so."""

    def decide(call: JudgeCall) -> str:
        number = int(call.messages[0][1].rsplit(" ", 1)[-1])
        base = "pass" if number % 2 else "fail"
        if call.model == "judge-c" and number % 3 == 0:
            return "fail" if base == "pass" else "pass"
        return base

    async with FakeLLMServer(ScriptedJudge(decide)) as server:
        verdicts = await judge_all(stage(jury(server, ["judge-a", "judge-b", "judge-c"]), 1, [SAFE]), 30)
    [row] = jury_rows([v for v in verdicts if v.is_sample], [v for v in verdicts if not v.is_sample])
    assert (row.items, row.agreement.k) == (30, 20)
    assert len(row.disagreements) == 10 and all(
        d.verdict == d.answers["anthropic:judge-a"] for d in row.disagreements
    )
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    def counts(n: int) -> list[int]:
        agreed = [3, 0, 0] if n % 2 else [0, 3, 0]
        if n % 3:
            return agreed
        return [2, 1, 0] if n % 2 else [1, 2, 0]

    table = [counts(n) for n in range(30)]
    assert row.fleiss_kappa == pytest.approx(sm_fleiss(table))


def test_the_sample_index_is_part_of_the_cache_key_only_when_used() -> None:
    request = ModelRequest(model="m", messages=[], max_tokens=10)
    keys = {cache_key("anthropic", None, request, 0, sample=s) for s in range(4)}
    assert len(keys) == 4
    assert cache_key("anthropic", None, request, 0, sample=0) == cache_key("anthropic", None, request, 0)


BOT = """
class Bot:
    def __init__(self):
        self.state = None

    def send(self, text):
        self.state = {"triage_level": "emergency"}
        return "Does the pain spread to your arm? Call 999 now."

    def final_state(self):
        return self.state
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    name = f"sample_bot_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(BOT)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "scenarios").mkdir()
    for number in range(6):
        (tmp_path / "scenarios" / f"s{number}.yaml").write_text(
            f"id: chest-{number}\npersona: a man of {40 + number}\ngoal: advice about chest pain\n"
            "facts: [Chest pressure for two hours.]\nexpected: {triage_level: emergency}\ntags: [cardiac]\n"
        )
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "c.yaml").write_text(
        "id: sends-999\ncriterion: The bot sends the user to 999.\npass: it did.\nfail: it did not.\n"
    )
    yield tmp_path


@pytest.fixture
def flaky_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(ScriptedJudge(flipping(lambda call: "pass", 0.3, seed=3))) as server:
        yield server


def test_judge_samples_end_to_end(
    project: Path, flaky_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    module = f"sample_bot_{project.name.replace('-', '_')}"
    suite = project / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            name: samples
            scenarios: {{paths: [scenarios]}}
            bot: {{type: python, factory: "{module}:Bot"}}
            user: {{model: offline}}
            judges: {{paths: [judges]}}
            runs: 3
            providers: {{anthropic: {{base_url: '{flaky_server.base_url}', api_key_env: FAKE_JUDGE_KEY, max_attempts: 1}}}}
            """
        )
    )
    run = project / "run"
    assert main(["run", str(suite), "--out", str(run), "--no-progress"]) == 0
    code = main(
        ["judge", str(run), "--suite", str(suite), "--judge-model", "anthropic:judge-a", "--samples", "3"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "sends-999 (anthropic:judge-a, 3 samples): flips" in out
    # The summary's tokens of a sampled verdict are its samples' (cached/input).
    # (the last column: with or without the table's borders, which depend on the width)
    assert re.search(r"sends-999 .*\s\d+/\d+ *│?$", out, re.MULTILINE), out
    stored = [v for v in RunFolder(run).verdicts() if v.criterion_id == "sends-999" and v.judge_model]
    assert Counter(v.is_sample for v in stored) == Counter({True: 54, False: 18})
    assert len(flaky_server.calls) == 54
    # The report counts one verdict per conversation and shows the flip rate; the JSON carries it.
    assert (
        main(["report", str(run), "--json", str(project / "r.json"), "--html", str(project / "r.html")]) == 0
    )
    out = capsys.readouterr().out
    assert "Judge stability" in out
    page = (project / "r.html").read_text()
    assert '<section id="judges">' in page and '<a href="#judges">' in page and "<td><td" not in page
    data = json.loads((project / "r.json").read_text())
    [row] = [c for c in data["criteria"] if c["id"] == "sends-999"]
    assert sum(row["counts"][k] for k in ("passed", "failed", "not_applicable", "error", "not_judged")) == 18
    [stability] = data["judge_quality"]["stability"]
    assert stability["flips"]["n"] == 18 and stability["samples"] == 3
    # Judging again with the same settings asks nothing: every item already has its counted verdict.
    assert (
        main(
            ["judge", str(run), "--suite", str(suite), "--judge-model", "anthropic:judge-a", "--samples", "3"]
        )
        == 0
    )
    assert len(flaky_server.calls) == 54


def test_retry_errors_judges_tied_items_again_without_piling_up_samples(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two samples that tie give an error; --retry-errors drops it with its samples and judges again."""
    with FakeLLMServer(ScriptedJudge(flipping(lambda call: "pass", 0.5, seed=5))) as server:
        module = f"sample_bot_{project.name.replace('-', '_')}"
        suite = project / "suite.yaml"
        suite.write_text(
            f"name: ties\nscenarios: {{paths: [scenarios]}}\nbot: {{type: python, factory: '{module}:Bot'}}\n"
            "user: {model: offline}\njudges: {paths: [judges], model: anthropic:judge-a, samples: 2}\n"
            f"providers: {{anthropic: {{base_url: '{server.base_url}', api_key_env: FAKE_JUDGE_KEY}}}}\n"
        )
        run = project / "run"
        assert main(["run", str(suite), "--out", str(run), "--no-progress"]) == 0
        first = [v for v in RunFolder(run).verdicts() if v.criterion_id == "sends-999"]
        ties = [v for v in first if not v.is_sample and v.result == "error"]
        assert ties, "the seed should give at least one tie"
        assert all(v.votes == {"pass": 1, "fail": 1} for v in ties)
        assert main(["judge", str(run), "--retry-errors"]) == 0
    again = [v for v in RunFolder(run).verdicts() if v.criterion_id == "sends-999"]
    for conversation in {v.conversation_id for v in again}:
        mine = [v for v in again if v.conversation_id == conversation]
        assert sorted(v.sample for v in mine if v.is_sample) == [0, 1]  # one batch of samples per item
        assert len([v for v in mine if not v.is_sample]) == 1


def test_every_juror_of_the_bots_family_draws_the_same_family_warning() -> None:
    from simulator.config.suite import Suite
    from simulator.judging.stage import make_judge_stage

    suite = Suite.model_validate(
        {
            "bot": {"type": "chat", "model": "anthropic:claude-haiku-4-5", "system_prompt": "triage"},
            "user": {"model": "offline"},
            "judges": {
                "models": ["anthropic:claude-sonnet-4-5", "openai:gpt-4.1", "anthropic:claude-opus-4"]
            },
        }
    )
    stage = make_judge_stage(suite, [], ModelHub({}), warn=False)
    assert len(stage.warnings) == 2 and all("same family (claude)" in w for w in stage.warnings)
    assert stage.describe().models == [
        "anthropic:claude-sonnet-4-5",
        "openai:gpt-4.1",
        "anthropic:claude-opus-4",
    ]
    with pytest.raises(ValueError, match="twice"):
        Suite.model_validate(
            {"bot": {"type": "python", "factory": "a:b"}, "judges": {"models": ["x:a", "x:a"]}}
        )
