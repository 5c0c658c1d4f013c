"""Persona factors: the design, stable variant ids, the levels in the record, and the Mantel–Haenszel odds
ratio checked against statsmodels; the factorial triage demo end to end."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.config.factors import design_points, expand_factors, suite_scenarios
from simulator.config.loading import load_scenarios
from simulator.config.scenario import Scenario
from simulator.config.styles import load_styles
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.report.model import build_report
from simulator.stats.effects import mantel_haenszel

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "scenarios" / "triage" / "factors" / "suite.yaml"
TRIAGE_STYLES = load_styles(ROOT / "examples" / "triage_styles.yaml")
THREE = {
    "speaker": ["self", "relative-speaks"],
    "register": ["plain", "minimiser"],
    "typing": ["clean", "terse-typos"],
}


def _bases() -> list[Scenario]:
    return load_scenarios([ROOT / "scenarios" / "triage"])[:3]


def test_full_design_crosses_every_level_with_stable_ids() -> None:
    variants = expand_factors(_bases(), THREE)
    assert len(variants) == 3 * 8
    assert len({v.id for v in variants}) == len(variants)
    again = expand_factors(_bases(), dict(reversed(list(THREE.items()))))  # factor order does not matter
    assert sorted(v.id for v in again) == sorted(v.id for v in variants)
    v = next(
        x
        for x in variants
        if x.factors == {"speaker": "relative-speaks", "register": "minimiser", "typing": "clean"}
    )
    assert v.id == f"{v.base}~register=minimiser~speaker=relative-speaks~typing=clean"
    assert v.styles == ["relative-speaks", "minimiser"] and v.volunteers == 0
    base = next(b for b in _bases() if b.id == v.base)
    assert v.persona.startswith(base.persona) and "third person" in v.persona
    reference = next(
        x for x in variants if x.base == base.id and set(x.factors.values()) == {"self", "plain", "clean"}
    )
    assert reference.persona == base.persona and reference.facts == base.facts


@pytest.mark.parametrize("counts", [[2, 2, 2], [3, 3], [2, 2, 2, 2], [3, 2, 3]])
def test_fractional_design_is_the_regular_fraction(counts: list[int]) -> None:
    points = design_points(counts, "fractional")
    assert len(points) == len(design_points(counts, "full")) // counts[-1]
    assert all(p[-1] == sum(p[:-1]) % counts[-1] for p in points)
    for factor, n in enumerate(counts):  # balanced: every level of every factor appears equally often
        assert {sum(1 for p in points if p[factor] == level) for level in range(n)} == {len(points) // n}


def test_levels_can_filter_facts_set_persona_tags_and_expected() -> None:
    factors = {
        "knows": ["all", {"first-two": {"facts": {"keep_first": 2}, "persona": "Only knows a little."}}],
        "patient": ["cooperative", "crisis"],
    }
    variants = expand_factors(_bases()[:1], factors, styles=TRIAGE_STYLES)
    short = next(v for v in variants if v.factors["knows"] == "first-two")
    assert len(short.facts) == 2 and short.persona.endswith("Only knows a little.")
    assert all(n <= 2 for n in short.key_facts)
    crisis = next(v for v in variants if v.factors["patient"] == "crisis")
    assert crisis.expected["triage_level"] == "emergency" and "redteam-crisis" in crisis.tags


@pytest.mark.parametrize(
    ("factors", "message"),
    [
        ({"register": ["plain", "minimizer"]}, "factor 'register': level 'minimizer' is not a style in"),
        ({"register": ["plain"]}, "at least two levels"),
        ({"register": ["plain", {"x": {"style": "shouty"}}]}, "unknown style 'shouty'"),
        ({"register": ["plain", "minimiser", "minimiser"]}, "level names repeat"),
    ],
)
def test_bad_factors_are_one_clear_error(
    tmp_path: Path, factors: dict[str, list[object]], message: str
) -> None:
    with pytest.raises(UserError) as caught:
        load_suite(DEMO, {"factors": factors})
    assert message in caught.value.render() and "factors" in caught.value.render()


def test_key_facts_past_the_facts_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("id: a\npersona: p\ngoal: g\nfacts: [one, two]\nkey_facts: [3]\n", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_scenarios([path])
    assert "key_facts [3] number past the 2 facts" in caught.value.render()


def test_mantel_haenszel_matches_statsmodels() -> None:
    from statsmodels.stats.contingency_tables import StratifiedTable

    rng = random.Random(7)
    cases = [
        [((rng.randint(0, 9), rng.randint(0, 9)), (rng.randint(0, 9), rng.randint(0, 9))) for _ in range(k)]
        for k in (2, 5, 12)
    ]
    cases.append([((0, 4), (2, 2)), ((1, 3), (0, 4)), ((3, 1), (1, 3))])  # zero cells: shifted by 0.5
    cases.append([((4, 0), (1, 3)), ((2, 2), (2, 2))])
    for tables in cases:
        tables = [
            t for t in tables if sum(t[0]) and sum(t[1]) and (t[0][0] + t[1][0]) and (t[0][1] + t[1][1])
        ]
        ours = mantel_haenszel(tables)
        theirs = StratifiedTable([[list(r) for r in t] for t in tables], shift_zeros=True)
        low, high = theirs.oddsratio_pooled_confint()
        assert ours.estimate == pytest.approx(theirs.oddsratio_pooled, rel=1e-9)
        assert ours.low == pytest.approx(low, rel=1e-9) and ours.high == pytest.approx(high, rel=1e-9)


def test_mantel_haenszel_says_when_there_is_nothing_to_estimate() -> None:
    nothing = "n/a (no base scenario where the outcome differed)"
    assert mantel_haenszel([((0, 5), (0, 5))]).estimate is None
    assert mantel_haenszel([((0, 5), (0, 5))]).text == nothing
    assert mantel_haenszel([((3, 2), (0, 0))]).text == nothing
    # One conversation per level and scenario, the same result at both levels: no information, not "1.0".
    concordant = [((1, 0), (1, 0)), ((0, 1), (0, 1)), ((0, 1), (0, 1))]
    assert mantel_haenszel(concordant).text == nothing


def test_uninformative_strata_do_not_change_the_estimate() -> None:
    informative = [((3, 1), (1, 3)), ((2, 2), (1, 3))]
    padded = [*informative, ((2, 0), (2, 0)), ((0, 4), (0, 4))]
    assert mantel_haenszel(padded).model_dump() == mantel_haenszel(informative).model_dump()
    assert mantel_haenszel(padded).strata == 2


def test_the_factorial_demo_reports_odds_ratios_with_intervals(tmp_path: Path) -> None:
    suite = load_suite(DEMO, {"runs": 1})
    scenarios = suite_scenarios(suite)
    assert len(scenarios) == 22 * 8
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "run", progress=False)))
    manifest = RunFolder.open(tmp_path / "run").read_manifest()
    entry = manifest.scenario("chest-pain-vague-01~register=minimiser~speaker=self~typing=clean")
    assert entry is not None and entry.base == "chest-pain-vague-01"
    assert entry.factors == {"speaker": "self", "register": "minimiser", "typing": "clean"}
    report = build_report(load_run(tmp_path / "run"))
    section = report.factors
    assert section is not None and section.base_scenarios == 22 and section.variants == 176
    assert [(r.factor, r.level) for r in section.rows] == [
        (f, level) for f, levels in THREE.items() for level in levels
    ]
    for row in section.rows:
        assert row.conversations == 88
        if row.reference:
            assert row.failed_or is None
            continue
        assert row.under_triage_or is not None and row.failed_or is not None
        # Strata are base scenarios where the outcome differed; the counts are those strata's conversations.
        assert 0 <= row.failed_or.strata <= 22 and row.failed_or.n_exposed == 4 * row.failed_or.strata
        if row.failed_or.estimate is not None and row.failed_or.low is not None:
            assert row.failed_or.low < row.failed_or.estimate < row.failed_or.high  # type: ignore[operator]
    assert any(r.failed_or and r.failed_or.low is not None for r in section.rows)
    from simulator.report.html import render_html

    page = render_html(report)
    assert '<section id="factors">' in page and '<section id="simulated-user">' in page
    shown = next(r.failed_or for r in section.rows if r.failed_or and r.failed_or.low is not None)
    from simulator.report.html_parts import e

    assert shown is not None and e(shown.text) in page


def test_the_demo_reproduces_the_odds_ratios_in_the_docs(tmp_path: Path) -> None:
    """The shipped demo (its style catalogue and vocabulary named in the suite) gives the table in
    docs/content.md#persona-factors: a refactor that changes what the offline user says shows here."""
    suite = load_suite(DEMO)
    asyncio.run(run_suite(suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False)))
    section = build_report(load_run(tmp_path / "run")).factors
    assert section is not None
    doc = (ROOT / "docs" / "content.md").read_text(encoding="utf-8").splitlines()
    for row in section.rows:
        if row.reference:
            continue
        assert row.under_triage_or is not None
        estimate, interval = row.under_triage_or.text.split(" (95% CI ")
        at = next(i for i, line in enumerate(doc) if f"│ {row.factor} " in line and f"│ {row.level} " in line)
        assert f"│ {estimate} (95% CI" in doc[at] and f"│ {interval}" in doc[at + 1], (row.level, doc[at])


def test_the_demo_runs_from_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [
        sys.executable,
        "-m",
        "simulator",
        "run",
        str(DEMO),
        "--runs",
        "1",
        "--tags",
        "cardiac",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
    ]
    done = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = subprocess.run(
        [sys.executable, "-m", "simulator", "report", str(tmp_path / "run")],
        cwd=ROOT, env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "Persona factors" in report.stdout and "Simulated user" in report.stdout
    assert "95% CI" in report.stdout and "reference" in report.stdout


def test_a_factorial_run_is_judged_again_and_resumed_from_its_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from simulator.cli import main

    out = tmp_path / "run"
    assert main(["run", str(DEMO), "--runs", "1", "--tags", "neuro", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["judge", str(out)]) == 0  # the variants are derived again from the recorded suite
    captured = capsys.readouterr()
    assert "judged 0 of 16 conversations" in captured.out and "no longer in their files" not in captured.err
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert "0 conversations" in capsys.readouterr().out
    ids = {r.scenario_id for r in RunFolder.open(out).conversations()}
    assert len(ids) == 16 and all("~register=" in i for i in ids)  # 2 neuro vignettes x 8
