"""The vignette is the unit: attack and factor variants of one vignette are conditions of it, never new
evidence. Every rate, bound, control, comparison and header clusters on `vignette_of`."""

from __future__ import annotations

from pathlib import Path

from simulator.analysis.compare import compare_runs
from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import load_run
from simulator.config.variants import variant_id, vignette_of
from simulator.report.model import build_report
from simulator.safety.case import build_safety_case, load_runs
from simulator.safety.hazards import load_hazard_log
from simulator.safety.view import safety_case_sections
from tests.synthetic import synthetic_outcome_run
from tests.test_safety_case import _log

ATTACKS = [f"a{i}" for i in range(8)]


def _red_team_plan(vignettes: int) -> dict[str, list[bool | str | None]]:
    """Each vignette straight and under eight attacks, every conversation escalated (as a red-team run)."""
    plan: dict[str, list[bool | str | None]] = {}
    for i in range(vignettes):
        base = f"v{i:02d}"
        plan[base] = [True]
        for attack in ATTACKS:
            plan[variant_id(base, {"attack": attack})] = [True]
    return plan


def test_vignette_of_reads_the_base_back_from_every_variant_id() -> None:
    assert vignette_of("chest-pain-01") == "chest-pain-01"
    assert (
        vignette_of(variant_id("chest-pain-01", {"attack": "x", "simulator": "offline"})) == "chest-pain-01"
    )


def test_a_red_team_run_pooled_over_attack_variants_does_not_meet_a_control_the_vignettes_cannot(
    tmp_path: Path,
) -> None:
    # 20 vignettes × 9 conditions = 180 flawless conversations. Counted as 180 scenarios the rule of three
    # gives 1.7% (met); the evidence is 20 vignettes, whose bound (about 14%) cannot show 5%.
    run = synthetic_outcome_run(tmp_path / "rt", _red_team_plan(20))
    case = build_safety_case(load_runs([run]), load_hazard_log(_log(tmp_path)))
    control = case.hazards[0].controls[0]
    assert control.conversations == 180
    assert control.rate is not None and control.rate.clustered is not None
    assert control.rate.clustered.scenarios == 20
    assert control.status == "not demonstrable" and case.exit_code == 3
    # The document counts vignettes first, variants after.
    drawn = repr(safety_case_sections(case))
    assert "180 conv. over 20 vignettes (180 variants)" in drawn
    # The same 20 vignettes straight only (the demo) read the same: attacks add no evidence.
    straight = synthetic_outcome_run(tmp_path / "plain", {f"v{i:02d}": [True] for i in range(20)})
    alone = build_safety_case(load_runs([straight]), load_hazard_log(_log(tmp_path)))
    assert alone.hazards[0].controls[0].status == "not demonstrable"


def test_outcome_rates_cluster_on_vignettes_and_the_header_counts_them(tmp_path: Path) -> None:
    plan = _red_team_plan(3)
    plan[variant_id("v00", {"attack": "a0"})] = [False]  # one attack succeeds
    run = load_run(synthetic_outcome_run(tmp_path / "rt", plan))
    metrics = outcome_metrics(run)
    assert metrics is not None
    sens = metrics.critical_sensitivity
    assert (sens.k, sens.n) == (26, 27)
    assert sens.clustered is not None and sens.clustered.scenarios == 3
    assert sens.repeated  # pooled over variants: the clustered interval is the one shown
    report = build_report(run)
    assert report.run.counted == "3 vignettes, 27 variants × 1 run = 27 conversations (planned 27)"


def test_compare_tests_at_the_vignette_level(tmp_path: Path) -> None:
    a = synthetic_outcome_run(tmp_path / "a", _red_team_plan(4))
    worse = _red_team_plan(4)
    for attack in ATTACKS:  # every attack on one vignette now succeeds: one vignette worse, not eight
        worse[variant_id("v00", {"attack": attack})] = [False]
    b = synthetic_outcome_run(tmp_path / "b", worse)
    comparison = compare_runs(a, b)
    metric = next(m for m in comparison.metrics if m.name.startswith("outcome:") and "escalated" in m.name)
    assert metric.scenarios == 4 and metric.scenarios_worse == 1
    assert metric.change != "worse"  # one vignette of four cannot establish a change
    assert (comparison.matched, comparison.vignettes) == (36, 4)
