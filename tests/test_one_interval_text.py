"""Every rendered string of a rate leads with its one interval (`RateView.interval`: clustered over vignettes
when the rate pools a vignette's conversations), with its unit; the per-conversation interval appears only
labelled as such. With nothing against the rate, every renderer shows the same one-sided bound on the
vignettes as the report and the gate (never the two-sided interval beside it). Probe D1: compare's A → B
lines, JUnit values, the API's `.text` and the JSON `text` showed the per-conversation interval alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.analysis.compare import compare_runs
from simulator.analysis.rundata import load_run
from simulator.report.junit import _stats_properties
from simulator.report.leaderboard_view import _rate
from simulator.report.model import build_report
from simulator.stats.rates import RateView, pct, rate_view
from tests.synthetic import synthetic_outcome_run

# (per-vignette (k, n), what k counts): repeats of mixed, failure-free and all-passing vignettes.
CASES = [
    ([(3, 3), (0, 3)], "failures"),
    ([(3, 3), (3, 3), (2, 3), (3, 3)], "successes"),
    ([(0, 3)] * 22, "failures"),
    ([(3, 3)] * 8, "successes"),
    ([(1, 4), (0, 4), (2, 4), (0, 4), (4, 4)], "failures"),
]


def _view(pairs: list[tuple[int, int]], counts: str) -> RateView:
    k, n = sum(a for a, _ in pairs), sum(b for _, b in pairs)
    return rate_view(k, n, counts=counts, per_scenario=pairs)  # type: ignore[arg-type]


def _cited(view: RateView) -> str:
    """The figure's one interval as a reader should cite it, in the words the renderers use."""
    assert view.clustered is not None
    bound = view.shown_bound
    if bound is None:
        low, high = view.interval
        return f"{pct(low)}–{pct(high)}"
    return pct(1 - bound if view.counts == "successes" else bound)


@pytest.mark.parametrize(("pairs", "counts"), CASES)
def test_text_and_short_lead_with_the_clustered_interval(pairs: list[tuple[int, int]], counts: str) -> None:
    view = _view(pairs, counts)
    cited, over = _cited(view), f"over {len(pairs)} vignettes"
    for shown in (view.text, view.short):
        assert cited in shown and over in shown, shown
        assert shown.index(cited) < shown.index("per conversation") and shown.index(over) < shown.index(
            "per conversation"
        ), shown
    assert cited in view.interval_text


@pytest.mark.parametrize(("pairs", "counts"), CASES)
def test_the_json_text_is_the_cited_form(pairs: list[tuple[int, int]], counts: str) -> None:
    view = _view(pairs, counts)
    again = RateView.model_validate_json(view.model_dump_json())
    assert again.text == view.text and "per conversation" in again.text


def test_no_failures_is_the_one_sided_bound_everywhere() -> None:
    """0/66 over 22 vignettes: the report and the gate say ≤12.7%; the leaderboard cell and the interval
    text drawn by the safety case and relations said 0.0%–14.9%."""
    view = _view([(0, 3)] * 22, "failures")
    assert view.interval_text == "≤12.7%"
    assert "≤12.7%" in _rate(view) and "14.9%" not in _rate(view)
    passes = _view([(3, 3)] * 8, "successes")
    assert passes.interval_text == "≥68.8%" and "≥68.8%" in _rate(passes)


def test_one_vignette_per_conversation_keeps_wilson() -> None:
    view = rate_view(3, 20, per_scenario=[(1, 1)] * 3 + [(0, 1)] * 17)
    assert view.short == "3/20 15.0% (5.2%–36.0%)" and "per conversation" not in view.text


PLANS = [
    ({"a": [True] * 3, "b": [False] * 3}, {"a": [True] * 3, "b": [True] * 3}),
    ({f"v{i}": [True, True] for i in range(5)}, {f"v{i}": [i != 0, True] for i in range(5)}),
]


@pytest.mark.parametrize(("plan_a", "plan_b"), PLANS)
def test_compare_lines_lead_with_the_clustered_interval(
    tmp_path: Path, plan_a: dict[str, list[bool]], plan_b: dict[str, list[bool]]
) -> None:
    a = synthetic_outcome_run(tmp_path / "a", plan_a)  # type: ignore[arg-type]
    b = synthetic_outcome_run(tmp_path / "b", plan_b)  # type: ignore[arg-type]
    comparison = compare_runs(a, b)
    over = f"over {len(plan_a)} vignettes"
    for metric in comparison.metrics:
        for side in (metric.a_rate, metric.b_rate):
            if side.n:
                assert over in side.short and side.short.index(over) < side.short.index("per conversation")


@pytest.mark.parametrize("plan", [p for p, _ in PLANS])
def test_junit_values_lead_with_the_clustered_interval(tmp_path: Path, plan: dict[str, list[bool]]) -> None:
    report = build_report(load_run(synthetic_outcome_run(tmp_path / "r", plan)))  # type: ignore[arg-type]
    values = [v for k, v in _stats_properties(report) if k.startswith("clustered.")]
    assert values
    for value in values:
        if "n/a" not in value:  # every vignette has repeats: the per-conversation interval comes second
            assert value.index(f"over {len(plan)} vignettes") < value.index("per conversation"), value
