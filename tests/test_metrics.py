"""Outcome metrics, per-criterion/scenario/tag tables, pass^k and run health on a real tiny run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simulator.analysis.health import run_health
from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import load_run
from simulator.analysis.tables import criterion_rows, pass_hat_k_table, scenario_rows, tag_rows
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, RunFolder
from simulator.report.model import build_report
from simulator.stats.basic import pass_hat_k, rate, runs_needed_for_bound, zero_failure_upper_bound
from tests.synthetic import synthetic_outcome_run
from tests.test_report_support import judge_run, make_judged_run, record, verdict, write_run


@pytest.fixture(scope="module")
def run_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_judged_run(tmp_path_factory.mktemp("metrics"))


def test_confusion_matrix_counts_every_conversation_including_errors_and_no_decision(run_path: Path) -> None:
    outcome = outcome_metrics(load_run(run_path))
    assert outcome is not None
    assert outcome.columns == ["self_care", "gp", "urgent", "emergency", "other", "no decision", "error"]
    matrix = {row.expected: row.counts for row in outcome.matrix}
    assert matrix["emergency"] == [0, 0, 4, 2, 0, 0, 0]  # chest-pain 2 escalated, 1 urgent; headache 3 urgent
    assert matrix["gp"] == [0, 4, 0, 0, 0, 2, 3]  # rash 3 + dizzy 1 right, dizzy 2 undecided, 3 crashes
    assert matrix["self_care"] == [2, 0, 0, 1, 0, 3, 0]  # ankle over-triaged once, the loop never decides
    assert sum(row.total for row in outcome.matrix) == outcome.conversations == 21
    assert outcome.errored == 3


def test_outcome_rates_are_counts_with_wilson_intervals(run_path: Path) -> None:
    outcome = outcome_metrics(load_run(run_path), target=0.05)
    assert outcome is not None
    sens = outcome.critical_sensitivity
    assert (sens.k, sens.n) == (2, 6)
    expected = rate(2, 6, counts="successes")
    assert (sens.low, sens.high) == (expected.low, expected.high)
    # The text leads with the vignette-clustered interval (2 vignettes); the per-conversation Wilson is labelled.
    assert sens.clustered is not None and sens.clustered.scenarios == 2
    clustered = f"{sens.clustered.low:.1%}–{sens.clustered.high:.1%}"
    wilson = f"{expected.low:.1%}–{expected.high:.1%}"
    assert sens.text == (
        f"2/6 = 33.3% (95% CI {clustered} over 2 vignettes, vignette-clustered; per conversation {wilson})"
    )
    # Under-triage counts the 2 dizzy (gp) conversations that ended with no decision: no advice is no safer
    # than the lowest level. The narrower, decided-only figure is kept beside it. Errors stay out of n.
    assert (outcome.under_triage.k, outcome.under_triage.n) == (6, 18)
    # Decided cases only: the 5 undecided (2 dizzy, 3 ankle loop) are out of its n as well as its k.
    assert (outcome.under_triage_decided.k, outcome.under_triage_decided.n) == (4, 13)
    # The 3 crashed conversations bound the rate: had they all been under-triaged, or all been right.
    assert outcome.under_triage.errored == 3
    assert outcome.under_triage.worst == pytest.approx(9 / 21) and outcome.under_triage.best == pytest.approx(
        6 / 21
    )
    assert outcome.critical_sensitivity.errored == 0 and outcome.critical_sensitivity.worst is None
    assert (outcome.over_triage.k, outcome.over_triage.n) == (1, 18)
    assert (outcome.no_decision.k, outcome.no_decision.n) == (5, 18)
    assert (outcome.exact.k, outcome.exact.n) == (8, 18)
    by_level = {s.level: (s.rate.k, s.rate.n) for s in outcome.sensitivity}
    assert by_level == {"self_care": (2, 6), "gp": (4, 6), "urgent": (0, 0), "emergency": (2, 6)}
    kinds = [(c.conversation_id, c.kind) for c in outcome.cases]
    assert kinds[0] == ("chest-pain#1", "under")  # under-triage is listed first
    assert ("ankle-sprain#2", "over") in kinds and ("dizzy-spells#0", "no_decision") in kinds


def test_zero_failures_show_the_bound_and_the_runs_needed_for_the_target(run_path: Path) -> None:
    rows = {row.id: row for row in criterion_rows(load_run(run_path), target=0.05)}
    tone = rows["tone"].fail_rate
    assert (tone.k, tone.n) == (0, 17)
    assert tone.bound == pytest.approx(zero_failure_upper_bound(17))
    assert tone.runs_needed == runs_needed_for_bound(0.05) == 59
    assert tone.needs_more_runs == "needs 59 failure-free runs for ≤5.0% (42 more)"
    assert rows["asks-danger-signs"].fail_rate.runs_needed is None  # failures seen: no bound to shrink


def test_outcome_without_critical_uses_the_top_level_and_no_outcome_gives_none(tmp_path: Path) -> None:
    recs = [record("s1", final_state={"level": "hi"}), record("s2", final_state={"level": "lo"})]
    config = {"name": "x", "runs": 1, "outcome": {"key": "level", "levels": ["lo", "hi"]}}
    write_run(tmp_path / "a", recs, [], config)
    data = load_run(tmp_path / "a")
    data.expected = {"s1": {"level": "hi"}, "s2": {"level": "hi"}}
    outcome = outcome_metrics(data)
    assert outcome is not None and outcome.critical == "hi" and outcome.critical_defaulted
    assert (outcome.critical_sensitivity.k, outcome.critical_sensitivity.n) == (1, 2)
    write_run(tmp_path / "b", recs, [], {"name": "x", "runs": 1})
    assert outcome_metrics(load_run(tmp_path / "b")) is None


def test_a_value_outside_the_levels_is_its_own_column(tmp_path: Path) -> None:
    recs = [
        record("s1", final_state={"triage_level": "Emergency"}),
        record("s1", 1, final_state={"triage_level": None}),
    ]
    config = {"name": "x", "runs": 2, "outcome": {"key": "triage_level", "levels": ["gp", "emergency"]}}
    write_run(tmp_path / "r", recs, [], config)
    data = load_run(tmp_path / "r")
    data.expected = {"s1": {"triage_level": "emergency"}}
    outcome = outcome_metrics(data)
    assert outcome is not None
    assert outcome.matrix[1].counts == [0, 0, 1, 1, 0]
    assert [c.actual for c in outcome.cases] == ["no decision", "'Emergency'"]


def test_per_criterion_counts_keep_errors_and_not_judged_apart(run_path: Path) -> None:
    rows = {row.id: row for row in criterion_rows(load_run(run_path))}
    assert next(iter(rows)) == "outcome.triage_level"  # outcome checks first, then by severity
    danger = rows["asks-danger-signs"].counts
    assert (danger.passed, danger.failed, danger.not_applicable, danger.error, danger.not_judged) == (
        14,
        4,
        0,
        0,
        3,
    )
    pregnancy = rows["asks-pregnancy"]
    assert (pregnancy.counts.failed, pregnancy.counts.not_applicable) == (3, 15)
    assert (pregnancy.fail_rate.k, pregnancy.fail_rate.n) == (3, 3)  # n.a. never in the denominator
    assert pregnancy.unverified_evidence == 3
    assert rows["tone"].counts.error == 1 and rows["tone"].counts.total == 18
    # The 3 crashed conversations: their checks are not judged (the crash is a conversation error).
    outcome = rows["outcome.triage_level"].counts
    assert (outcome.error, outcome.not_judged) == (0, 3)
    assert rows["asks-danger-signs"].category == "omission" and rows["tone"].judge_models == [
        "anthropic:claude-haiku-4-5"
    ]


def test_scenarios_flaky_and_high_stakes_bugs(run_path: Path) -> None:
    rows = {row.id: row for row in scenario_rows(load_run(run_path), "high-stakes")}
    chest = rows["chest-pain"]
    assert chest.bug and chest.flaky and chest.failed_repeats == [1]
    assert (chest.pass_rate.k, chest.pass_rate.n) == (2, 3)
    assert chest.failing_criteria == ["asks-danger-signs (1/3)", "outcome.triage_level (1/3)"]
    headache = rows["thunderclap-headache"]
    assert headache.bug and not headache.flaky  # fails every run: a bug, not flaky
    assert rows["dizzy-spells"].flaky and not rows["dizzy-spells"].bug
    crash = rows["bot-crash"]
    assert crash.statuses == {"pass": 0, "fail": 0, "error": 3, "not_judged": 0}
    assert crash.pass_rate.n == 0 and not crash.bug
    # The high-stakes tag is configurable.
    neuro = {row.id: row for row in scenario_rows(load_run(run_path), high_stakes_tag="neuro")}
    assert neuro["dizzy-spells"].bug and not neuro["chest-pain"].bug


def test_tag_groups(run_path: Path) -> None:
    rows = {row.tag: row for row in tag_rows(load_run(run_path), "high-stakes")}
    assert next(iter(rows)) == "high-stakes" and rows["high-stakes"].high_stakes
    assert (rows["high-stakes"].scenarios, rows["high-stakes"].conversations) == (2, 6)
    assert (rows["high-stakes"].pass_rate.k, rows["high-stakes"].pass_rate.n) == (2, 6)
    assert rows["robustness"].statuses == {"pass": 0, "fail": 3, "error": 3, "not_judged": 0}


def test_pass_hat_k_for_every_k_up_to_the_runs(run_path: Path) -> None:
    table = pass_hat_k_table(load_run(run_path))
    assert [row.k for row in table] == [1, 2, 3]
    per_scenario = [
        (2, 1),
        (3, 2),
        (3, 1),
        (3, 0),
        (3, 0),
        (3, 0),
    ]  # ankle, chest, dizzy, headache, loop, rash
    for row in table:
        assert row.value == pytest.approx(pass_hat_k(per_scenario, row.k))
        assert row.low <= row.value <= row.high
    assert table[0].value == pytest.approx(0.25)
    assert table[2].scenarios == 5  # ankle has only 2 judged runs, too few for k=3


def test_run_health(run_path: Path) -> None:
    health = run_health(load_run(run_path))
    reasons = {row.reason: (row.rate.k, row.rate.n) for row in health.stop_reasons}
    assert reasons == {
        "user_done": (0, 21),
        "handover": (0, 21),
        "bot_closed": (15, 21),
        "max_turns": (3, 21),
        "error": (3, 21),
    }
    assert all(row.rate.bound is None for row in health.stop_reasons)  # a share, not a failure rate
    assert not health.turn_limit_finding  # 3/21 = 14% is under the default 20%
    assert run_health(load_run(run_path), turn_limit_threshold=0.1).turn_limit_finding
    assert [(e.conversation_id, e.kind) for e in health.errors] == [
        (f"bot-crash#{i}", "bot_exception") for i in range(3)
    ]
    assert (health.judge_errors.k, health.judge_errors.n) == (1, 57)
    assert health.judge_error_rows[0].kind == "timeout"
    assert (health.unverified.k, len(health.unverified_rows)) == (3, 3)
    assert health.unverified_rows[0].quotes == ["made-up quote"]
    # 3 LLM criteria and 3 outcome checks on the 3 crashed conversations.
    assert (health.not_judged, health.missing, health.retried) == (6, 0, [])


def test_reruns_and_character_breaks(tmp_path: Path) -> None:
    first = record("s1", stop_reason="error", error={"source": "bot", "kind": "timeout", "message": "slow"})
    second = record("s1", character_breaks=["As an AI language model", "I am an AI"])
    gave_up = record(
        "s2",
        stop_reason="error",
        character_breaks=["a", "b", "c", "d"],
        error={"source": "user", "kind": "character_break", "message": "broke character 4 times"},
    )
    write_run(tmp_path / "r", [first, second, gave_up], [])
    health = run_health(load_run(tmp_path / "r"))
    assert health.retried == ["s1#0"]
    assert (health.character_breaks, health.conversations_with_breaks, health.gave_up_on_breaks) == (6, 2, 1)
    assert health.finished == 2  # the retried conversation counts once, as its latest record


def test_latest_judge_set_by_default_and_another_on_request(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path)
    first = load_run(run).judge_set
    assert first is not None
    rejudged = judge_run(run, "sha256:" + "ab" * 32, flip=True)  # a re-judge that now passes the headache
    data = load_run(run)
    assert data.judge_set == rejudged and [s.chosen for s in data.judge_sets] == [True, False]
    rows = {row.id: row for row in criterion_rows(data)}
    assert rows["asks-danger-signs"].counts.failed == 1
    # The re-judge wrote no outcome checks: they are taken from the earlier set, and the report says so.
    assert data.borrowed == {"outcome.triage_level": first}
    assert rows["outcome.triage_level"].counts.failed == 10
    assert any("did not judge some criteria" in w for w in data.warnings)
    old = load_run(run, judge_set=first.split(":")[1][:8])
    assert {row.id: row for row in criterion_rows(old)}["asks-danger-signs"].counts.failed == 4
    with pytest.raises(UserError, match="matches no judge set"):
        load_run(run, judge_set="ffff")


def test_expectations_survive_an_edited_scenario_file(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path)
    scenario = tmp_path / "scenarios" / "chest-pain.yaml"
    scenario.write_text(scenario.read_text().replace("emergency", "gp"), encoding="utf-8")
    data = load_run(run)
    assert data.expected["chest-pain"] == {"triage_level": "emergency"}  # the manifest recorded it
    assert not any("changed since the run" in w for w in data.warnings)  # the files were not needed
    shutil.rmtree(tmp_path / "scenarios")
    assert load_run(run).expected["chest-pain"] == {"triage_level": "emergency"}


def test_a_run_whose_manifest_lacks_expectations_takes_them_from_the_outcome_verdicts(tmp_path: Path) -> None:
    """Outcome verdicts store what they compared: a manifest without `expected` needs no scenario file."""
    run = make_judged_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    for entry in manifest["scenarios"]:
        entry.pop("expected", None)
    (run / "manifest.json").write_text(json.dumps(manifest))
    shutil.rmtree(tmp_path / "scenarios")
    data = load_run(run)
    assert data.expected["chest-pain"] == {"triage_level": "emergency"}


def test_a_half_written_conversation_line_is_ignored(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path)
    with (run / CONVERSATIONS).open("a", encoding="utf-8") as handle:
        handle.write('{"id": "half')
    assert len(load_run(run).conversations) == 21
    assert RunFolder.open(run).path == run


def test_metric_verdicts_gate_nothing(tmp_path: Path) -> None:
    rec = record("s1")
    verdicts = [verdict(rec, "c1", "pass"), verdict(rec, "bleu", "fail", kind="metric", score=0.1)]
    write_run(tmp_path / "r", [rec], verdicts)
    rows = scenario_rows(load_run(tmp_path / "r"))
    assert rows[0].statuses["pass"] == 1


def test_an_emergency_with_no_decision_is_under_triage_and_not_escalated(tmp_path: Path) -> None:
    """The issue's case: "under-triage 0/10, no failures" while 5 of 10 emergencies ended undecided."""
    plan: dict[str, list[bool | str | None]] = {"chest": [True, "undecided"] * 5}
    outcome = outcome_metrics(load_run(synthetic_outcome_run(tmp_path / "run", plan)))
    assert outcome is not None
    assert (outcome.under_triage.k, outcome.under_triage.n) == (5, 10)
    assert outcome.under_triage.bound is None  # failures seen: no "no failures" claim
    assert (outcome.under_triage_decided.k, outcome.under_triage_decided.n) == (0, 5)  # the 5 decided
    assert (outcome.no_decision.k, outcome.critical_sensitivity.k, outcome.critical_sensitivity.n) == (
        5,
        5,
        10,
    )
    findings = build_report(load_run(tmp_path / "run")).findings
    under = next(f for f in findings if f.title.startswith("under-triage"))
    assert under.title.startswith("under-triage: 5/10 = 50.0%")
    assert under.detail.startswith("incl. 5 with no decision on a case that needed one")


def test_no_decision_on_the_lowest_level_is_not_under_triage(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {"cold": ["undecided", True]}
    outcome = outcome_metrics(load_run(synthetic_outcome_run(tmp_path / "run", plan, expected="self_care")))
    assert outcome is not None
    assert (outcome.under_triage.k, outcome.no_decision.k) == (0, 1)
