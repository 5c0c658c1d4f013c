"""Comparing two real runs: pairing, McNemar and bootstrap, flipped cases, refusals and the CI exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import chi2

from simulator.analysis.compare import compare_runs
from simulator.cli import main
from simulator.errors import UserError
from simulator.record.folder import MANIFEST
from simulator.stats.basic import mcnemar_exact, paired_bootstrap
from simulator.stats.clustered import clustered_paired_bootstrap
from tests.synthetic import synthetic_outcome_run
from tests.test_report_support import BOT, SCENARIOS, judge_run, make_judged_run, run_tiny

# Candidate bot: every decision becomes self_care (a serious under-triage regression).
BOT_B = BOT.replace(
    "            self.plan = PLAN[key][index % 3]\n",
    "            self.plan = PLAN[key][index % 3]\n"
    '            if self.plan not in (None, "crash", "loop"):\n'
    '                self.plan = "self_care"\n',
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    a = make_judged_run(tmp_path_factory.mktemp("a"))
    a2 = make_judged_run(tmp_path_factory.mktemp("a2"))
    b = make_judged_run(tmp_path_factory.mktemp("b"), bot=BOT_B)
    return a, a2, b


def test_the_candidate_bot_really_changed() -> None:
    assert BOT_B != BOT and 'self.plan = "self_care"' in BOT_B


def test_a_regression_on_three_scenarios_is_not_significant_at_the_scenario_level(
    runs: tuple[Path, Path, Path],
) -> None:
    """6 conversations got worse, but in only 3 scenarios: per conversation p = 0.031, per scenario not."""
    a, _, b = runs
    comparison = compare_runs(a, b)
    assert comparison.matched == 21 and comparison.only_in_a == comparison.only_in_b == []
    metrics = {m.name: m for m in comparison.metrics}
    under = metrics["outcome: not under-triaged"]
    # chest-pain #0 #2 (emergency -> self_care), rash x3 and dizzy #1 (gp -> self_care) got worse; dizzy #0
    # and #2 end with no decision in both runs, which now counts as under-triage on both sides.
    assert (under.only_a, under.only_b, under.pairs, under.excluded) == (6, 0, 18, 3)
    assert under.p_value == pytest.approx(mcnemar_exact(6, 0)) == 0.03125
    assert (under.scenarios, under.scenarios_worse, under.scenarios_better) == (6, 3, 0)
    # Clustered McNemar: (2 + 3 + 1)^2 / (4 + 9 + 1) = 36/14 on 1 df; sign test: 3 of 3 scenarios worse.
    assert under.clustered_p_value == pytest.approx(chi2.sf(36 / 14, 1))
    assert under.sign_p_value == 0.25
    assert under.change == "no significant change" and under.critical
    assert under.diff == pytest.approx(-6 / 18)
    # Resampling the 6 scenarios (not the 18 conversations), the interval reaches past 0, as the test says.
    assert under.diff_low <= under.diff < 0 < under.diff_high and under.interval_note == ""
    assert "can detect a mean change of about" in under.power_note
    escalated = metrics["outcome: emergency escalated"]
    assert (escalated.only_a, escalated.only_b, escalated.pairs) == (2, 0, 6)
    assert escalated.change == "no significant change"
    assert "too few vignettes: 2 cannot show any difference" in escalated.power_note
    assert comparison.regressions == []


def test_flipped_cases_carry_the_judges_evidence(runs: tuple[Path, Path, Path]) -> None:
    a, _, b = runs
    metrics = {m.name: m for m in compare_runs(a, b).metrics}
    outcome = metrics["outcome.triage_level"]
    flip = next(f for f in outcome.flips if f.conversation_id == "chest-pain#0")
    assert flip.direction == "regression" and (flip.a_result, flip.b_result) == ("pass", "fail")
    assert flip.b_evidence == ["triage_level='self_care'"]
    assert "'self_care'" in flip.b_reasoning
    improvements = [f.conversation_id for f in outcome.flips if f.direction == "improvement"]
    assert improvements == ["ankle-sprain#2"]  # A over-triaged it; B's self_care is right
    pregnancy = metrics["asks-pregnancy"]
    assert pregnancy.pairs == 3 and pregnancy.flips == []


def test_the_difference_interval_resamples_scenarios_like_the_decision(runs: tuple[Path, Path, Path]) -> None:
    a, _, b = runs
    metric = next(m for m in compare_runs(a, b).metrics if m.name == "outcome: emergency escalated")
    # chest-pain #0..#2 and headache #0..#2: B lost two escalations, both in chest-pain.
    low, high = clustered_paired_bootstrap([[-1.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    assert (metric.diff_low, metric.diff_high) == (low, high) == (-1.0, 1.0)  # 2 scenarios: t on 1 df
    conversations = paired_bootstrap([1, 0, 1, 0, 0, 0], [0] * 6)  # the old, per-conversation interval
    assert conversations.high <= 0 < metric.diff_high


@pytest.mark.parametrize(
    ("worse", "same", "repeats"),
    [(3, 3, 3), (3, 17, 4), (2, 0, 50), (4, 36, 5)],
)
def test_no_interval_excludes_zero_under_no_significant_change_without_saying_why(
    tmp_path: Path, worse: int, same: int, repeats: int
) -> None:
    """The issue's class: "+4 to +33 points" under "no significant change". The interval resamples
    scenarios; when it still excludes 0 while the scenario-level test does not decide, the metric says so."""
    plan_a: dict[str, list[bool | str | None]] = {f"s{i:02}": [True] * repeats for i in range(worse + same)}
    failing: list[bool | str | None] = [False] * repeats
    plan_b = {key: (failing if i < worse else value) for i, (key, value) in enumerate(plan_a.items())}
    a = synthetic_outcome_run(tmp_path / "a", plan_a)
    b = synthetic_outcome_run(tmp_path / "b", plan_b)
    for m in compare_runs(a, b).metrics:
        if m.pairs == 0:
            continue
        flat = [-1.0] * (worse * repeats) + [0.0] * (same * repeats)
        per_conversation = paired_bootstrap([0.0] * len(flat), flat)
        assert m.diff_high - m.diff_low >= per_conversation.high - per_conversation.low - 1e-9
        if m.change == "no significant change" and not m.diff_low <= 0 <= m.diff_high:
            assert (
                m.interval_note.startswith("the interval excludes 0 but")
                and "describes these" in m.interval_note
            )
        else:
            assert m.interval_note == ""


def test_same_bot_same_results_show_no_change_but_name_config_differences(
    runs: tuple[Path, Path, Path],
) -> None:
    a, a2, _ = runs
    comparison = compare_runs(a, a2)
    assert comparison.regressions == []
    assert all(m.only_a == m.only_b == 0 and m.p_value == 1.0 for m in comparison.metrics)
    keys = {d.key for d in comparison.config_differences}
    assert "suite.bot.factory" in keys  # each tiny run imports its own bot module: visible, not hidden
    assert comparison.scenario_diff == 0.0


def test_config_differences_show_model_and_temperature(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, a2, _ = runs
    manifest = json.loads((a2 / MANIFEST).read_text(encoding="utf-8"))
    manifest["suite"]["user"]["temperature"] = 0.2
    manifest["suite"]["judges"]["model"] = "openai:gpt-4.1"
    (a2 / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    try:
        diffs = {d.key: (d.a, d.b) for d in compare_runs(a, a2).config_differences}
    finally:
        manifest["suite"]["user"]["temperature"] = 1.0
        manifest["suite"]["judges"]["model"] = "anthropic:claude-haiku-4-5"
        (a2 / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert diffs["suite.user.temperature"] == ("1.0", "0.2")
    assert diffs["suite.judges.model"] == ("anthropic:claude-haiku-4-5", "openai:gpt-4.1")


def test_runs_of_different_scenario_sets_are_refused(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, _, _ = runs
    fewer = {k: v for k, v in SCENARIOS.items() if k != "loop.yaml"}
    c = run_tiny(tmp_path / "c", scenarios=fewer)
    with pytest.raises(UserError, match=r"different scenario sets.*only in A: endless-loop; only in B: none"):
        compare_runs(a, c)


def test_different_repeat_counts_are_compared_on_shared_repeats(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    a, _, _ = runs
    d = run_tiny(tmp_path / "d", runs=2)
    judge_run(d)
    comparison = compare_runs(a, d)
    assert comparison.matched == 14 and len(comparison.only_in_a) == 7
    assert any(diff.key == "suite.runs" for diff in comparison.config_differences)


def test_fail_on_regression_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """12 scenarios x 3 repeats; B stops escalating 8 of them: significant over scenarios, exit 1."""
    a = synthetic_outcome_run(tmp_path / "a", {f"s{i:02}": [True] * 3 for i in range(12)})
    b = synthetic_outcome_run(tmp_path / "b", {f"s{i:02}": [i >= 8] * 3 for i in range(12)})
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--fail-on-regression", "--json", str(out)]) == 1
    captured = capsys.readouterr()
    assert "Significant regressions on critical metrics" in captured.out and "regression:" in captured.err
    assert "8 worse, 0 better of 12" in captured.out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["regressions"] and data["schema_version"] == 2
    assert main(["compare", str(a), str(b)]) == 0  # without the flag a regression is reported, not fatal
    assert main(["compare", str(a), str(a), "--fail-on-regression"]) == 0
    assert main(["compare", str(b), str(a), "--fail-on-regression"]) == 0  # the other way: an improvement


def test_two_scenarios_with_fifty_repeats_are_not_significant(tmp_path: Path) -> None:
    """The issue's example: 100 conversations flip, but they are 2 scenarios of a deterministic bot."""
    a = synthetic_outcome_run(tmp_path / "a", {"s1": [True] * 50, "s2": [True] * 50})
    b = synthetic_outcome_run(tmp_path / "b", {"s1": [False] * 50, "s2": [False] * 50})
    metrics = {m.name: m for m in compare_runs(a, b).metrics}
    escalated = metrics["outcome: emergency escalated"]
    assert (escalated.only_a, escalated.pairs) == (100, 100)
    assert escalated.p_value < 1e-29  # what repeats-as-trials would claim
    assert escalated.clustered_p_value == pytest.approx(
        chi2.sf(2.0, 1)
    )  # 0.157: the most 2 scenarios can give
    assert escalated.sign_p_value == 0.5
    assert escalated.change == "no significant change"
    assert escalated.power_note.startswith("too few vignettes: 2 cannot show any difference at α=0.05")
    # The conversation-pass metric and the outcome check agree.
    assert all(m.change == "no significant change" for m in metrics.values())


@pytest.mark.parametrize(
    ("candidate", "code"),
    [
        ({f"s{i:02}": [None] * 3 for i in range(12)}, 3),  # every candidate conversation errored
        ({f"s{i:02}": [None, None, True] for i in range(12)}, 3),  # two thirds errored
        ({f"s{i:02}": [None] * 3 if i < 7 else [True] * 3 for i in range(12)}, 3),  # 7 of 12 vignettes
        ({f"s{i:02}": [None] * 3 if i < 2 else [True] * 3 for i in range(12)}, 0),  # most compared
    ],
)
def test_fail_on_regression_is_undecidable_when_a_critical_metric_has_too_little_to_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], candidate: dict[str, list[bool | None]], code: int
) -> None:
    a = synthetic_outcome_run(tmp_path / "a", {f"s{i:02}": [True] * 3 for i in range(12)})
    b = synthetic_outcome_run(tmp_path / "b", dict(candidate))
    assert main(["compare", str(a), str(b), "--fail-on-regression"]) == code
    captured = capsys.readouterr()
    if code == 3:
        assert "too little to compare" in captured.out and "undecidable" in captured.err
        assert "no critical metric got significantly worse where there was enough to compare" in captured.out
        assert compare_runs(a, b).undecided
    else:
        assert "too little to compare" not in captured.out and not compare_runs(a, b).undecided
    assert main(["compare", str(a), str(b)]) == 0  # without the flag it is reported, not fatal
