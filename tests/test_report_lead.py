"""What a clinical lead reads first (issue 31, items 1-4, 10 and the report half of 15): the findings and
the critical rates lead both reports, coloured by state; the vignette-clustered interval is the interval
wherever repeats exist, the per-conversation one secondary and labelled; the zero-failure bound rests on
the scenarios; errored cases that could move a rate across its interval are shown beside it and warned
about (a planted crash-biased bot, several seeds); the errored range is written low–high; passing rows
that say nothing new are one line, `--all` lists them."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import pytest
from rich.console import Console

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.report.html import render_html
from simulator.report.html_parts import ci_plot
from simulator.report.model import Report, build_report
from simulator.report.section import Figures, Findings, Table
from simulator.report.sections import report_sections
from simulator.report.summary_view import rate_sub
from simulator.report.terminal import render_terminal
from simulator.stats.rates import rate_view
from tests.synthetic import synthetic_outcome_run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The demo suite as the README runs it: 22 scenarios x 3 runs."""
    out = tmp_path_factory.mktemp("demo") / "run"
    assert main(["run", str(ROOT / "scenarios/triage/suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    return build_report(load_run(out))


def _terminal(report: Report, everything: bool = False) -> str:
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=250, color_system=None), everything)
    return buffer.getvalue()


# ---- the demo figures stay the same --------------------------------------------------------------------------


def test_the_demo_figures_are_unchanged(demo: Report) -> None:
    assert demo.run.conversations == 66
    assert sum(row.counts.total for row in demo.criteria) == 474
    assert demo.outcome is not None
    sens = demo.outcome.critical_sensitivity
    assert (sens.k, sens.n) == (21, 24)


# ---- item 1: findings and critical rates first, coloured by state ----------------------------------------------


def test_the_summary_leads_both_reports_with_findings_then_critical_rates(demo: Report) -> None:
    sections = report_sections(demo)
    summary = sections[0]
    assert summary.id == "summary" and summary.state == "fail"
    critical, findings, others = summary.blocks
    assert isinstance(findings, Findings) and isinstance(critical, Figures) and isinstance(others, Figures)
    assert [line.level for line in findings.lines][:3] == ["bug", "bug", "warning"]
    assert critical.critical and [f.label for f in critical.figures] == [
        "emergency sensitivity (escalated)",
        "under-triage incl. no decision",
    ]
    assert [f.state for f in critical.figures] == ["fail", "fail"]
    # The demo judges no LLM criterion: the figure says it covers the code checks only (reading item 8).
    passing_label = "conversations passing the code checks (no LLM criterion judged)"
    assert others.figures[0].label == passing_label and others.figures[0].state is None
    # The terminal: the red rates, then the findings, then "conversations passing".
    text = _terminal(demo)
    summary_at = text.index("\nSummary\n")
    sensitivity = text.index("emergency sensitivity (escalated) 87.5% · 21/24")
    bug = text.index("BUG      chest-pain-vague-01 failed 3 of 3 runs")
    passing = text.index(f"{passing_label} 95.5%")
    outcome = text.index("Outcome 'triage_level'")
    assert summary_at < sensitivity < bug < passing < outcome
    assert "overall pass" not in text
    # HTML: the same order, the sections in the order of the one list.
    page = render_html(demo)
    assert page.index('class="cards critical"') < page.index('<ul class="findings">')
    assert page.index('<ul class="findings">') < page.index("conversations passing")
    ids = re.findall(r'<section id="([a-z-]+)">', page)
    assert ids[:-1] == [s.id for s in sections if not s.empty] and ids[-1] == "transcripts"
    card = page[page.index('class="cards critical"') :]
    assert card.startswith('class="cards critical"><div class="card st-fail"><div class="label">emergency')


def test_a_rate_with_no_failures_is_not_drawn_red() -> None:
    red, green = "#c62828", "#1a7f37"
    assert red not in ci_plot(rate_view(0, 66)) and green in ci_plot(rate_view(0, 66))
    assert red in ci_plot(rate_view(3, 66))
    assert red in ci_plot(rate_view(21, 24, counts="successes"))  # 3 not escalated
    assert green in ci_plot(rate_view(24, 24, counts="successes")) and red not in ci_plot(
        rate_view(5, 5, counts="successes")
    )
    assert "#b26a00" in ci_plot(rate_view(24, 24, counts="successes"), state="warn")  # a state wins


def test_in_the_demo_page_no_rate_without_failures_has_a_red_dot(demo: Report) -> None:
    page = render_html(demo)
    plots = re.findall(r'<svg class="ci".*?</svg>', page)
    clean = [svg for svg in plots if "none seen" in svg or "none missed" in svg]  # 0/66, 12/12 ...
    assert len(clean) > 10
    for svg in clean:
        assert "#c62828" not in svg, svg
    assert any("#c62828" in svg for svg in plots if "21/24" in svg)  # the missed emergencies are red


# ---- item 2: the clustered interval is the interval where repeats exist ----------------------------------------


def test_with_repeats_the_clustered_interval_comes_first_and_the_naive_one_is_labelled(demo: Report) -> None:
    text = _terminal(demo)
    # the outcome-rates table and the summary
    assert (
        "21/24 = 87.5% (95% CI 43.2%–98.5% over 8 vignettes, vignette-clustered; per conversation 69.0%–95.7%)"
        in text
    )
    assert "87.5% · 21/24 · 95% CI 43.2%–98.5% over 8 vignettes; per conversation 69.0%–95.7%" in text
    # the criteria table
    assert "3/66 4.5% (0.7%–23.9% over 22 vignettes; per conversation 1.6%–12.5%)" in text
    # the findings: no naive interval first anywhere
    assert "(95% CI 69.0%–95.7%)" not in text
    assert "3/66 = 4.5% (95% CI 1.6%–12.5%)" not in text


def test_without_repeats_the_interval_is_the_wilson_one_alone() -> None:
    one_each = rate_view(3, 20, per_scenario=[(1, 1)] * 3 + [(0, 1)] * 17)
    assert not one_each.repeated
    assert one_each.short == one_each.short == "3/20 15.0% (5.2%–36.0%)"
    assert one_each.text == one_each.text
    repeated = rate_view(3, 20, per_scenario=[(3, 4)] + [(0, 4)] * 4)
    assert repeated.repeated and repeated.interval == (repeated.clustered.low, repeated.clustered.high)  # type: ignore[union-attr]
    assert repeated.short.index("over 5 vignettes") < repeated.short.index("per conversation")


# ---- item 3: the zero-failure bound rests on the scenarios -------------------------------------------------------


@pytest.mark.parametrize(("per", "bound", "naive"), [
    ([9] * 3 + [8] * 17, "13.9%", "1.8%"),  # the 0/163 over 20 vignettes
    ([3] * 22, "12.7%", "4.4%"),  # the demo's 0/66 over 22
    ([2] * 5, "45.1%", "25.9%"),
])  # fmt: skip
def test_with_no_failures_the_bound_on_scenarios_comes_first(per: list[int], bound: str, naive: str) -> None:
    scenarios = len(per)
    value = rate_view(0, sum(per), per_scenario=[(0, m) for m in per])
    text = value.text
    first = f"none seen: at most {bound} over {scenarios} vignettes, 95% one-sided"
    assert first in text and f"per conversation ≤{naive}" in text
    assert text.index(first) < text.index(f"per conversation ≤{naive}")
    # One bound on the vignettes, no two-sided interval beside it (reading item 5).
    assert (
        value.short
        == f"0/{sum(per)} 0.0% (≤{bound} over {scenarios} vignettes, one-sided; per conversation ≤{naive})"
    )


def test_the_demo_over_triage_bound_is_over_scenarios(demo: Report) -> None:
    text = _terminal(demo)
    # Reading item 5: one bound for one zero (was "95% CI 0.0%–14.9% …; fail ≤12.7% …; per conversation ≤4.4%").
    assert "over-triage 0.0% · 0/66 · 95% ≤12.7% over 22 vignettes, one-sided; per conversation ≤4.4%" in text
    assert "0.0%–14.9%" not in text
    assert "failure rate ≤ 4.4% at 95% one-sided" not in text


# ---- item 4: crash-biased errors are shown beside the headline and warned about ----------------------------------


def _crash_biased(seed: int) -> tuple[dict[str, list[bool | str | None]], float]:
    """20 scenarios x 6 repeats, each scenario escalated with its own chance; a conversation the bot would
    get wrong crashes 7 times in 10, one it would get right 2 times in 100. Returns the plan and the true
    sensitivity (over every conversation, the crashed ones as they would have ended)."""
    rng = random.Random(seed)
    plan: dict[str, list[bool | str | None]] = {}
    truth = []
    for s in range(20):
        chance = rng.choice([1.0, 0.95, 0.8, 0.6, 0.4])
        row: list[bool | str | None] = []
        for _ in range(6):
            right = rng.random() < chance
            truth.append(right)
            crashed = rng.random() < (0.02 if right else 0.7)
            row.append(None if crashed else right)
        plan[f"s{s:02d}"] = row
    return plan, sum(truth) / len(truth)


SEEDS = range(6)


@pytest.mark.parametrize("seed", SEEDS)
def test_crash_biased_errors_put_the_bounds_beside_the_headline_and_warn(tmp_path: Path, seed: int) -> None:
    plan, truth = _crash_biased(seed)
    report = build_report(load_run(synthetic_outcome_run(tmp_path / "run", plan)))
    assert report.outcome is not None
    sens = report.outcome.critical_sensitivity
    span = sens.missing_range
    assert span is not None and span[0] <= truth <= span[1]  # the bounds hold the truth
    assert sens.errors_could_move
    low, high = span
    beside = f"{100 * low:.1f}%–{100 * high:.1f}% if the {sens.errored} errored had all failed or passed"
    assert sens.short.endswith(beside + ")") and sens.text.endswith(beside + ")")
    summary = report_sections(report)[0]
    critical = summary.blocks[0]
    assert isinstance(critical, Figures) and critical.critical
    headline = critical.figures[0]
    assert (
        headline.label == "emergency sensitivity (escalated)"
        and headline.note == f"{beside}: read it as that range"
    )
    assert headline.state in ("fail", "warn") and beside not in headline.sub  # said once
    warned = [
        f for f in report.findings if f.title.startswith("errors could concentrate in the cases that fail")
    ]
    assert len(warned) == 1 and warned[0].level == "warning"
    moved = f"emergency sensitivity {100 * sens.rate:.1f}% (95% CI {100 * sens.interval[0]:.1f}%–"  # type: ignore[operator]
    assert moved in warned[0].title and f"to {100 * low:.1f}%–{100 * high:.1f}%" in warned[0].title
    text = _terminal(report)
    line = next(x for x in text.splitlines() if x.startswith("emergency sensitivity (escalated)"))
    assert beside in line
    assert "WARNING  errors could concentrate in the cases that fail" in text
    card = render_html(report).split('class="cards critical">', 1)[1]
    assert card.index(f'<div class="moved">{beside}: read it as that range</div>') < card.index(
        '<svg class="ci"'
    )


def test_the_planted_bias_is_real_the_headline_interval_misses_the_truth() -> None:
    """Without the bounds the reader is misled: the interval left without the crashes misses the truth."""
    missed = 0
    for seed in SEEDS:
        plan, truth = _crash_biased(seed)
        pairs = [(sum(x is True for x in v), sum(x is not None for x in v)) for v in plan.values()]
        k, n = sum(a for a, _ in pairs), sum(b for _, b in pairs)
        value = rate_view(k, n, counts="successes", per_scenario=pairs)
        missed += not (value.interval[0] <= truth <= value.interval[1])
    assert missed >= len(SEEDS) - 1


def test_an_error_that_cannot_move_a_rate_adds_no_bounds_and_no_warning(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"s{i:02d}": [True] * 5 for i in range(20)}
    plan["s00"][0] = None
    plan["s07"][1] = False
    report = build_report(load_run(synthetic_outcome_run(tmp_path / "run", plan)))
    assert report.outcome is not None
    sens = report.outcome.critical_sensitivity
    assert sens.errored == 1 and not sens.errors_could_move
    assert "if the" not in sens.short
    assert not any("could concentrate" in f.title for f in report.findings)


# ---- item 10: the errored range is written lowest first -----------------------------------------------------------


@pytest.mark.parametrize(("k", "n", "errored", "counts", "shown"), [
    (2, 20, 4, "failures", "4 errored: 8.3%–25.0% had they all passed or failed"),
    (18, 20, 4, "successes", "4 errored: 75.0%–91.7% had they all failed or passed"),
    (0, 30, 2, "failures", "2 errored: 0.0%–6.2% had they all passed or failed"),
])  # fmt: skip
def test_the_errored_range_is_low_to_high(k: int, n: int, errored: int, counts: str, shown: str) -> None:
    value = rate_view(k, n, counts=counts, errored=errored)  # type: ignore[arg-type]
    assert shown in rate_sub(value)


def test_the_html_cards_write_every_errored_range_low_to_high(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"s{i}": [True, False, True, None] for i in range(6)}
    page = render_html(build_report(load_run(synthetic_outcome_run(tmp_path / "run", plan))))
    ranges = re.findall(r"errored: (\d+\.\d)%–(\d+\.\d)%", page)
    assert ranges
    for low, high in ranges:
        assert float(low) <= float(high), (low, high)


# ---- item 15: passing rows collapsed into one line, failures expanded, --all lists everything ----------------------


def _tables(report: Report, everything: bool = False) -> tuple[Table, Table]:
    section = next(s for s in report_sections(report, everything) if s.id == "scenarios")
    scenarios, tags = (
        b for b in section.blocks if isinstance(b, Table) and b.title.startswith(("Scen", "Tag"))
    )
    return scenarios, tags


def test_passing_scenarios_and_tags_collapse_into_one_line_each(demo: Report) -> None:
    scenarios, tags = _tables(demo)
    assert [row.cells[0].text for row in scenarios.rows] == ["chest-pain-vague-01"]
    assert scenarios.collapsed_note == "21 more scenarios passed every run (3 of 3 each)"
    assert len(scenarios.collapsed) == 21
    failing_tags = {"cardiac", "downplays", "high-stakes", "terse"}
    assert {row.cells[0].text for row in tags.rows} == failing_tags
    assert tags.collapsed_note == (
        f"{len(demo.tags) - 4} more tags: no failing or errored verdict, every conversation passing; some of "
        "their criteria were not judged"
    )
    text = _terminal(demo)
    assert "21 more scenarios passed every run (3 of 3 each) · report --all lists them" in text
    page = render_html(demo)
    assert (
        '<details class="collapsed"><summary>21 more scenarios passed every run (3 of 3 each)</summary>'
        in page
    )


def test_all_lists_every_row(demo: Report) -> None:
    scenarios, tags = _tables(demo, everything=True)
    assert len(scenarios.rows) == 22 and not scenarios.collapsed_note
    assert len(tags.rows) == len(demo.tags) and not tags.collapsed_note
    assert "passed every run" not in _terminal(demo, everything=True)


def test_a_flaky_or_errored_scenario_is_never_collapsed(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"ok{i}": [True, True] for i in range(4)}
    plan["flaky"] = [True, False]
    plan["crashed"] = [True, None]
    scenarios, _ = _tables(build_report(load_run(synthetic_outcome_run(tmp_path / "run", plan))))
    assert {row.cells[0].text for row in scenarios.rows} == {"flaky", "crashed"}
    assert scenarios.collapsed_note == "4 more scenarios passed every run (2 of 2 each)"


def test_the_cli_takes_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan: dict[str, list[bool | str | None]] = {f"ok{i}": [True, True] for i in range(3)}
    run = synthetic_outcome_run(tmp_path / "run", plan)
    assert main(["report", str(run), "--json", str(tmp_path / "r.json")]) == 0
    assert "all 3 scenarios passed every run (2 of 2 each)" in " ".join(capsys.readouterr().out.split())
    assert main(["report", str(run), "--all"]) == 0
    out = capsys.readouterr().out
    assert "passed every run" not in out and "ok2" in out
    assert json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["id"] == "ok0"  # the JSON keeps all
