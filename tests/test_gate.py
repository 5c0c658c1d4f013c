"""`simulator gate`: requirements judged on the vignette-clustered bound, with the documented exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.errors import UserError
from simulator.report.gate import evaluate_gate, parse_requirement
from simulator.stats.basic import runs_needed_for_bound, zero_failure_upper_bound
from tests.support.damaged_runs import as_recorded, cut_verdicts, interrupt
from tests.synthetic import synthetic_outcome_run


def _run(tmp_path: Path, name: str, plan: dict[str, list[bool | str | None]]) -> Path:
    return synthetic_outcome_run(tmp_path / name, plan)


def test_a_flawless_run_on_enough_scenarios_meets_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, "good", {f"s{i:02}": [True, True] for i in range(80)})
    code = main(
        ["gate", str(run), "--require", "under_triage <= 5%", "--require", "emergency_sensitivity >= 95%"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "gate met (exit 0)" in out
    # No failures: the bound rests on the 80 distinct vignettes, not the 160 conversations.
    assert f"{100 * zero_failure_upper_bound(80):.1f}%" in out and "80 vignettes" in out


def test_many_repeats_of_few_scenarios_cannot_decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,000 flawless conversations from 10 scenarios still bound under-triage only at 25.9%: exit 3."""
    run = _run(tmp_path, "few", {f"s{i}": [True] * 100 for i in range(10)})
    assert main(["gate", str(run), "--require", "under_triage <= 5%"]) == 3
    out = capsys.readouterr().out
    assert "UNDECIDABLE" in out and "25.9%" in out
    assert f"at least {runs_needed_for_bound(0.05)} distinct vignettes (49 more)" in out
    assert "more repeats cannot help" in out


def test_a_rate_whose_bound_misses_is_not_met_and_says_what_would_decide_it(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"s{i:02}": [True] * 4 for i in range(80)}
    plan["s00"] = [False] * 4  # one scenario always under-triaged: 4/320 = 1.25%, clustered bound above 5%
    result = evaluate_gate(
        load_run(_run(tmp_path, "bad", plan)), ["under_triage <= 5%", "under_triage <= 1%"]
    )
    first, second = result.results
    assert first.status == "not met" and first.bound is not None and first.bound > 0.05
    assert first.rate is not None and first.rate.rate == pytest.approx(4 / 320)
    # Counted as independent trials the Wilson upper limit would be under 5% and the gate would pass.
    assert first.rate.high < 0.05
    assert "vignettes" in first.advice and "more" in first.advice
    assert second.status == "not met" and "more runs will not help unless the bot changes" in second.advice
    assert result.exit_code == 1


def test_an_emergency_with_no_decision_fails_the_under_triage_gate(tmp_path: Path) -> None:
    """A bot that never decides must not look safe: no decision on an emergency is under-triage."""
    plan: dict[str, list[bool | str | None]] = {f"s{i:02}": ["undecided", "undecided"] for i in range(80)}
    result = evaluate_gate(load_run(_run(tmp_path, "mute", plan)), ["under_triage <= 5%"])
    assert result.exit_code == 1
    rate = result.results[0].rate
    assert rate is not None and (rate.k, rate.n) == (160, 160)
    # Decided cases only: none was decided, so nothing is measured (never "0/160, no failures").
    decided = evaluate_gate(load_run(tmp_path / "mute"), ["under_triage_decided <= 5%"]).results[0]
    assert decided.rate is not None and (decided.rate.k, decided.rate.n) == (0, 0)
    assert decided.status == "undecidable" and decided.reason == "nothing measured"


def test_a_changed_scenario_set_makes_the_gate_undecidable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, "run", {f"s{i:02}": [True, True] for i in range(80)})
    base = _run(tmp_path, "base", {f"s{i:02}": [True, True] for i in range(1, 81)})
    same = _run(tmp_path, "same", {f"s{i:02}": [True, False] for i in range(80)})
    assert main(["gate", str(run), "--baseline", str(base), "--require", "under_triage <= 5%"]) == 3
    assert "only in this run: s00; only in the baseline: s80" in capsys.readouterr().out
    out = tmp_path / "gate.json"
    assert (
        main(
            ["gate", str(run), "--baseline", str(same), "--require", "under_triage <= 5%", "--json", str(out)]
        )
        == 0
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["exit_code"] == 0 and data["results"][0]["baseline"]["k"] == 80  # baseline shown beside


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("under_triage = 5%", "write METRIC OP VALUE"),
        ("undertriage <= 5%", "did you mean 'under_triage'?"),
        ("emergency_sensitivty >= 95%", "did you mean 'emergency_sensitivity'?"),
        ("under_triage <= 150%", "between 0 and 1"),
        ("<= 5%", "write METRIC OP VALUE"),
    ],
)
def test_bad_requirements_are_one_clear_error_naming_the_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    run = _run(tmp_path, "r", {"s1": [True], "s2": [True]})
    assert main(["gate", str(run), "--require", text]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    if "METRIC" in message or "did you mean" in message:
        assert "under_triage, under_triage_decided" in err  # the metric list


def test_requirement_syntax() -> None:
    known = ["under_triage", "pass_rate"]
    assert parse_requirement("under_triage<=5%", known).threshold == pytest.approx(0.05)
    assert parse_requirement(" pass_rate >= 0.9 ", known).op == ">="
    with pytest.raises(UserError, match="did you mean 'pass_rate'"):
        parse_requirement("pass-rate > 0.5", known)


def test_no_requirement_or_no_run_folder_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, "r", {"s1": [True], "s2": [True]})
    assert main(["gate", str(run)]) == 2
    assert "name at least one requirement" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "nowhere"), "--require", "under_triage <= 5%"]) == 2


# ---- the advice comes from the bound that decides (issue 31, item 6) ------------------------------------------


def _one_failing(tmp_path: Path, name: str, scenarios: int, repeats: int, clean: int = 0) -> Path:
    """`scenarios` scenarios, the first one always under-triaged, plus `clean` more that never fail."""
    plan: dict[str, list[bool | str | None]] = {
        f"s{i:03}": [True] * repeats for i in range(scenarios + clean)
    }
    plan["s000"] = [False] * repeats
    return _run(tmp_path, name, plan)


@pytest.mark.parametrize(("scenarios", "repeats"), [(40, 3), (80, 4), (25, 2)])
def test_more_scenarios_with_no_failures_is_what_the_decision_needs(
    tmp_path: Path, scenarios: int, repeats: int
) -> None:
    """The advised number of failure-free scenarios, added to the run, meets the gate; one fewer does not.

    The old advice ignored the failing scenario: "19 more scenarios with no failures" on 40 with one
    always failing, where 72 are needed."""
    result = evaluate_gate(load_run(_one_failing(tmp_path, "r", scenarios, repeats)), ["under_triage <= 5%"])
    first = result.results[0]
    assert first.status in ("not met", "undecidable") and first.more_clean_scenarios is not None
    more = first.more_clean_scenarios
    assert (
        f"at best {scenarios + more} vignettes ({more} more), and only if none of the new ones fails"
        in first.advice
    )
    enough = evaluate_gate(
        load_run(_one_failing(tmp_path, "ok", scenarios, repeats, more)), ["under_triage <= 5%"]
    )
    short = evaluate_gate(
        load_run(_one_failing(tmp_path, "short", scenarios, repeats, more - 1)), ["under_triage <= 5%"]
    )
    assert enough.results[0].status == "met" and short.results[0].status != "met"


def test_forty_scenarios_one_always_failing_needs_about_296_at_the_observed_rate(tmp_path: Path) -> None:
    result = evaluate_gate(load_run(_one_failing(tmp_path, "r", 40, 3)), ["under_triage <= 5%"])
    first = result.results[0]
    assert first.status == "undecidable"
    assert first.advice.startswith("even a flawless result on 40 vignettes gives a bound of 7.2%: ")
    assert "about 296 vignettes (256 more) if the new ones behave like these (rate 2.5%" in first.advice
    assert "at best 112 vignettes (72 more), and only if none of the new ones fails" in first.advice
    assert "59 distinct vignettes" not in first.advice  # the zero-failure count, wrong once one has failed
    # At a multiple of 40 the "alike" projection is an actual run: the same scenarios, copied.
    plan: dict[str, list[bool | str | None]] = {f"s{i:03}": [True] * 3 for i in range(320)}
    for i in range(0, 320, 40):
        plan[f"s{i:03}"] = [False] * 3
    bigger = evaluate_gate(load_run(_run(tmp_path, "x8", plan)), ["under_triage <= 5%"]).results[0]
    half = {key: value for key, value in list(plan.items())[:280]}
    smaller = evaluate_gate(load_run(_run(tmp_path, "x7", half)), ["under_triage <= 5%"]).results[0]
    assert bigger.status == "met" and smaller.status != "met"  # 296 lies between 280 and 320


def test_repeats_help_only_with_the_correlation_observed(tmp_path: Path) -> None:
    """Failures spread over repeats (ICC 0): more repeats would do it, and the advice says on what assumption."""
    shaky: list[bool | str | None] = [False, True, True, True, True]
    steady: list[bool | str | None] = [True] * 5
    plan = {f"s{i:02}": shaky if i % 3 == 0 else steady for i in range(30)}
    first = evaluate_gate(load_run(_run(tmp_path, "icc0", plan)), ["under_triage <= 12%"]).results[0]
    assert first.status == "not met"
    assert "about 6 repeats per vignette if repeats correlate as observed (ICC 0.00)" in first.advice


def _errored_plan(
    scenarios: int, crashed: int, per_crash: list[bool | str | None]
) -> dict[str, list[bool | str | None]]:
    """`scenarios` flawless vignettes (two repeats each), the first `crashed` of them replaced by `per_crash`."""
    plan: dict[str, list[bool | str | None]] = {f"s{i:02}": [True, True] for i in range(scenarios)}
    for i in range(crashed):
        plan[f"s{i:02}"] = list(per_crash)
    return plan


@pytest.mark.parametrize(
    ("plan", "requirement"),
    [
        (_errored_plan(60, 12, [None, None]), "under_triage <= 10%"),  # 24 errored: all failed would be 20%
        (_errored_plan(60, 12, [None, None]), "emergency_sensitivity >= 90%"),  # the same, as successes
        (_errored_plan(40, 10, [None, True]), "under_triage <= 10%"),  # one crash in each of 10 vignettes
        (_errored_plan(60, 12, [None, None]), "pass_rate >= 90%"),
    ],
)
def test_errored_conversations_that_could_flip_a_met_requirement_make_it_undecidable(
    tmp_path: Path, plan: dict[str, list[bool | str | None]], requirement: str
) -> None:
    """Counted without the errored the bound meets it; had they all gone against it the rate would miss it."""
    result = evaluate_gate(load_run(_run(tmp_path, "crashy", plan)), [requirement])
    item = result.results[0]
    errored = sum(1 for outcomes in plan.values() for o in outcomes if o is None)
    assert item.bound is not None and item.rate is not None and item.rate.errored == errored
    assert (item.status, result.exit_code) == ("undecidable", 3)
    assert f"{errored} errored left out, which could flip it" in item.reason
    assert "--retry-errors" in item.advice


@pytest.mark.parametrize("requirement", ["under_triage <= 10%", "emergency_sensitivity >= 90%"])
def test_errored_conversations_that_cannot_flip_it_are_still_counted_in_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], requirement: str
) -> None:
    run = _run(tmp_path, "one-crash", _errored_plan(60, 1, [True, None]))
    assert main(["gate", str(run), "--require", requirement]) == 0
    out = capsys.readouterr().out
    assert "MET" in out and "1 errored left out" in out and "could flip" not in out


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda run: interrupt(run, 2), "run status interrupted: 78 of 80 planned conversations recorded"),
        (lambda run: interrupt(run, 3, "complete"), "run status complete: 77 of 80 planned"),
        (lambda run: cut_verdicts(run, 30, torn=True), "verdicts.jsonl ends in a torn line"),
        (lambda run: cut_verdicts(run, 30, torn=False), "holds no code verdict for 50 of 80 conversations"),
    ],
)
def test_the_gate_says_what_an_incomplete_run_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[Path], Path], said: str
) -> None:
    """An interrupted run, a torn last line, verdicts lost: the gate prints each gap with its fix and says its
    verdict rests on incomplete records, in the terminal and the JSON (D4). A clean run prints none."""
    run = as_recorded(_run(tmp_path, "run", {f"s{i:02}": [True] for i in range(80)}))
    assert main(["gate", str(run), "--require", "pass_rate >= 50%"]) == 0
    assert "INCOMPLETE" not in capsys.readouterr().out
    damage(run)
    # Met on what it saw, but what is missing could flip it: undecidable (exit 3), never a pass (exit 0).
    assert main(["gate", str(run), "--require", "pass_rate >= 50%", "--json", str(tmp_path / "g.json")]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "INCOMPLETE" in out and said in out and "on incomplete records" in out
    assert "simulator run --resume" in out
    gate = json.loads((tmp_path / "g.json").read_text())
    assert any(said in gap for gap in gate["incomplete"])
    (result,) = gate["results"]
    assert result["status"] == "undecidable" and "records are incomplete" in result["reason"]
    # A requirement the seen records already miss stays not met (exit 1): missing records cannot excuse it.
    assert main(["gate", str(run), "--require", "pass_rate <= 50%"]) == 1
