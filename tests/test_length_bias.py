"""Judge bias controls: length control of pairwise verdicts (win rate over length-matched pairs, the
length–verdict correlation), the same for pointwise criteria in the run report, and the self-preference
(same model family) warning of pairwise judging.

The judges are responders of the `test:` provider (tests/length_support.py) behind the real OpenAI SDK:
`longer_judge` prefers the longer conversation whenever the lengths differ by more than 10%; `wording_judge`
decides on a phrase, whatever the length. The bots are the triage bot padded by known amounts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from simulator.analysis.length_bias import bot_length, correlation, pairwise_length_control
from simulator.cli import main
from simulator.config.suite import Suite
from simulator.engine.pairwise import common_conversations, pairwise_criterion
from simulator.engine.rejudge import stored_suite
from simulator.judging.pairwise import OrderChoice, PairwiseResult
from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent


def write_suite(folder: Path, bot: str, judge: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{bot}-{judge or 'none'}.yaml".replace(":", "_")
    model = f'"test:tests.length_support:{judge}"' if judge else "null"
    path.write_text(
        f"""scenarios: {{paths: [{ROOT / "scenarios" / "triage"}]}}
bot: {{type: python, factory: "tests.length_support:{bot}"}}
user: {{model: offline, vocabulary: {ROOT / "examples" / "triage_vocabulary.yaml"}}}
judges: {{paths: [{ROOT / "judges" / "triage"}], model: {model}}}
runs: 1
"""
    )
    return path


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("length")
    for bot in ("long_bot", "plain_bot"):
        assert main(["run", str(write_suite(root, bot)), "--out", str(root / bot), "--no-progress"]) == 0
    return root / "long_bot", root / "plain_bot"


def _pairwise(runs: tuple[Path, Path], judge: str) -> list[str]:
    return [
        "judge-pairwise", str(runs[0]), str(runs[1]), "--criterion", "safety-netting",
        "--judge-model", f"test:tests.length_support:{judge}",
    ]  # fmt: skip


def test_a_length_biased_pairwise_judge_is_detected(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(_pairwise(two_runs, "longer_judge")) == 0
    captured = capsys.readouterr()
    # 14 of the 22 pairs differ by more than 10% and the longer (always A here) wins; 8 are matched: ties.
    # (The patient of issue 39 answers more fully, so fewer replies are within 10%: it was 12 and 10.)
    assert "win rate of A (ties count half): 81.8% of 22 judged pairs" in captured.out
    assert "length-controlled (bot replies within 10%): 50.0% of 8 pairs" in captured.out
    assert "the longer conversation won 14/14" in captured.out
    assert "warning: the judge's verdicts follow length (r = +0.9" in captured.err


def test_a_judge_that_ignores_length_draws_no_warning(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(_pairwise(two_runs, "wording_judge")) == 0
    captured = capsys.readouterr()
    assert "length and verdict: r = +0.29 (p 0.186" in captured.out  # no evidence of a length effect
    assert "follow length" not in captured.err


def test_length_control_counts_matched_pairs_from_the_records(two_runs: tuple[Path, Path]) -> None:
    """The same numbers from the analysis itself, with made-up verdicts: A wins every pair."""
    a_folder, b_folder = RunFolder.open(two_runs[0]), RunFolder.open(two_runs[1])
    suite = stored_suite(a_folder.read_manifest(), a_folder.path)
    a, b, common = common_conversations(a_folder, b_folder, pairwise_criterion(suite, None, "safety-netting"))
    results = [
        PairwiseResult(conversation_id=cid, criterion_id="x", winner="A", position_consistent=True,
                       orders=[OrderChoice(order="AB", choice="A"), OrderChoice(order="BA", choice="A")])
        for cid in common
    ]  # fmt: skip
    control = pairwise_length_control(results, a, b)
    matched = [
        cid for cid in common
        if abs(bot_length(a[cid].turns) - bot_length(b[cid].turns))
        <= 0.1 * max(bot_length(a[cid].turns), bot_length(b[cid].turns))
    ]  # fmt: skip
    assert control.matched == len(matched) == 8 and control.judged == 22
    assert control.a_win_rate == control.matched_a_win_rate == 1.0
    assert control.correlation.r is None  # the verdict never varies: nothing to correlate
    assert control.warning is None


def test_pointwise_length_bias_is_reported_per_criterion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for judge in ("long_passes", "even_passes"):
        suite = write_suite(tmp_path, "long_bot", judge)
        assert main(["run", str(suite), "--out", str(tmp_path / judge), "--no-progress"]) == 0
        report = ["report", str(tmp_path / judge), "--json", str(tmp_path / f"{judge}.json")]
        assert main([*report, "--html", str(tmp_path / f"{judge}.html")]) == 0
    out = capsys.readouterr().out
    biased = {
        r["criterion_id"]: r for r in json.loads((tmp_path / "long_passes.json").read_text())["length_bias"]
    }
    fair = {
        r["criterion_id"]: r for r in json.loads((tmp_path / "even_passes.json").read_text())["length_bias"]
    }
    assert (
        biased["safety-netting"]["correlation"]["r"] > 0.7
        and biased["safety-netting"]["correlation"]["p"] < 0.001
    )
    assert biased["safety-netting"]["pass_length"] > biased["safety-netting"]["fail_length"]
    assert abs(fair["safety-netting"]["correlation"]["r"]) < 0.3
    assert out.count("safety-netting: the judge's verdicts follow the bot's reply length") == 1
    assert "verdict follows length: longer passes" in (tmp_path / "long_passes.html").read_text()
    assert "verdict follows length" not in (tmp_path / "even_passes.html").read_text()
    assert "follow the bot's reply length" not in out.split("even_passes", 1)[-1]


def test_correlation_values() -> None:
    known = correlation([1, 2, 3, 4, 5], [2, 4, 5, 4, 5])
    assert known.r == pytest.approx(0.7745967) and known.p is not None and 0.05 < known.p < 0.2
    assert not known.follows_length  # five points: too few to warn
    strong = correlation(list(range(20)), [0] * 10 + [1] * 10)
    assert strong.r is not None and strong.r > 0.8 and strong.follows_length
    assert correlation([1, 2, 3, 4], [1, 1, 1, 1]).r is None
    assert correlation([1, 2], [0, 1]).text == "r n/a (n=2: too few)"
    negative = correlation(list(range(20)), [1] * 10 + [0] * 10)
    assert negative.r is not None and negative.r < -0.8 and negative.follows_length


def _suites(bot_a: str, bot_b: str) -> tuple[Suite, Suite]:
    return tuple(  # type: ignore[return-value]
        Suite.model_validate({"bot": {"type": "chat", "model": m, "system_prompt": "You triage."}})
        for m in (bot_a, bot_b)
    )


@pytest.mark.parametrize(
    ("judge", "bot_a", "bot_b", "warned"),
    [
        ("anthropic:claude-sonnet-4-5", "anthropic:claude-haiku-4-5", "openai:gpt-4.1", ["bot A"]),
        ("openai:gpt-4.1-mini", "anthropic:claude-haiku-4-5", "openai:o3", ["bot B"]),
        ("openai:Qwen/Qwen2.5-72B", "openai:qwen2.5-7b", "openai:llama-3.1-8b", ["bot A"]),
        ("openai:llama-3.3-70b", "openai:llama-3.1-8b", "openai:llama-3.2-3b", ["bot A", "bot B"]),
        ("anthropic:claude-sonnet-4-5", "openai:gpt-4.1", "openai:llama-3.1-8b", []),
    ],
)
def test_pairwise_self_preference_warning(
    judge: str, bot_a: str, bot_b: str, warned: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from simulator.commands.judge import _pairwise_model

    suite_a, suite_b = _suites(bot_a, bot_b)
    assert _pairwise_model(argparse.Namespace(judge_model=judge), suite_a, suite_b) == judge
    err = capsys.readouterr().err
    assert [role for role in ("bot A", "bot B") if f"as the {role} (" in err] == warned
    assert err.count("self-enhancement bias") == len(warned)


def test_each_simulated_user_of_the_judges_family_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    from simulator.judging.stage import make_judge_stage
    from simulator.providers.hub import ModelHub

    suite = Suite.model_validate(
        {
            "bot": {"type": "python", "factory": "examples.triage_bot:make_bot"},
            "user": {
                "models": [
                    "offline",
                    {"haiku": "anthropic:claude-haiku-4-5"},
                    {"mini": "openai:gpt-4.1-mini"},
                ]
            },
            "judges": {"model": "anthropic:claude-sonnet-4-5"},
        }
    )
    [warning] = make_judge_stage(suite, [], ModelHub()).describe().warnings
    assert "same family (claude) as the simulated user 'haiku' (anthropic:claude-haiku-4-5)" in warning
