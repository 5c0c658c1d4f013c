"""The 14 figures a clinical lead could misread (issue 44), each pinned on the rendered text of the demo and
red-team reports, the safety case and the desk. Items 5-7 are pinned in test_stats.py / test_report_lead.py,
12 in test_safety_case.py, 13 in test_gate.py; this file holds the rest and the first screen."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.report.html import render_html
from simulator.report.model import Report, build_report
from simulator.report.terminal import render_terminal
from simulator.serve import DeskConfig, create_app
from simulator.stats.rates import CITE

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path_factory: pytest.TempPathFactory, suite: str, name: str) -> Path:
    out = tmp_path_factory.mktemp(name) / name
    assert main(["run", str(ROOT / suite), "--out", str(out), "--no-progress"]) in (0, 1)
    return out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory, "scenarios/triage/suite.yaml", "demo")


@pytest.fixture(scope="module")
def redteam_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory, "scenarios/redteam/suite.yaml", "redteam")


@pytest.fixture(scope="module")
def demo(demo_run: Path) -> Report:
    return build_report(load_run(demo_run))


@pytest.fixture(scope="module")
def redteam(redteam_run: Path) -> Report:
    return build_report(load_run(redteam_run))


def _terminal(report: Report, width: int = 80) -> str:
    buffer = io.StringIO()
    render_terminal(report, Console(file=buffer, width=width, color_system=None))
    return buffer.getvalue()


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_item_1_the_red_team_header_counts_vignettes_and_variants(redteam: Report) -> None:
    assert redteam.run.counted == "22 vignettes, 168 variants × 1 run = 168 conversations (planned 168)"
    assert "22 vignettes, 168 variants × 1 run = 168 conversations" in _flat(_terminal(redteam, 200))
    assert "168 scenarios" not in _terminal(redteam, 200)
    assert "22 vignettes, 168 variants" in render_html(redteam)


def test_item_2_the_red_team_cards_are_clustered_over_vignettes(redteam: Report) -> None:
    outcome = redteam.outcome
    assert outcome is not None
    sens = outcome.critical_sensitivity
    assert sens.clustered is not None and sens.clustered.scenarios == 17  # emergency vignettes, not variants
    assert sens.repeated and sens.interval == (sens.clustered.low, sens.clustered.high)
    assert "over 17 vignettes" in _flat(_terminal(redteam))


def test_item_3_one_figure_one_interval_in_terminal_html_and_safety_case(
    redteam: Report, redteam_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    section = redteam.analysis("redteam")
    buried = next(r for r in section.strategies if r.strategy == "buried-self-harm")
    low, high = buried.success.interval
    shown = f"{buried.success.k}/{buried.success.n} = {100 * buried.success.rate:.1f}% ({100 * low:.1f}%–{100 * high:.1f}%)"
    assert shown in _flat(_terminal(redteam, 200))
    page = render_html(redteam)
    assert f"<small>({100 * low:.1f}%–{100 * high:.1f}%)</small>" in page  # the HTML cell, short form
    assert f"(95% CI {100 * low:.1f}%–{100 * high:.1f}%)" in page
    capsys.readouterr()
    main(["safety-case", str(redteam_run), "--hazards", str(ROOT / "examples/triage_hazards.yaml")])
    out = _flat(capsys.readouterr().out)
    assert (
        "buried-self-harm" in out
        and f"{shown[: shown.index(' = ')]} = 90.0% ({100 * low:.1f}%–{100 * high:.1f}%)" in out
    )


def test_item_4_lists_say_how_many_they_left_out(redteam: Report) -> None:
    text = _flat(_terminal(redteam, 200))
    assert "and 4 more (simulator show RUN)" in text  # 9 successes, 5 listed
    assert re.search(r"read: \S+, \S+, \S+ and 6 more", text)  # the bug line names 3 of 9 on the first screen


def test_item_8_conversations_passing_says_it_covers_the_code_checks_only(demo: Report) -> None:
    text = _flat(_terminal(demo, 200))
    assert "conversations passing the code checks (no LLM criterion judged) 95.5%" in text


def test_item_9_every_report_and_the_safety_case_say_which_interval_to_cite(
    demo: Report, demo_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert CITE in _flat(_terminal(demo, 200)) and "Cite the first interval of each figure" in render_html(
        demo
    )
    capsys.readouterr()
    main(["safety-case", str(demo_run), "--hazards", str(ROOT / "examples/triage_hazards.yaml")])
    assert "Cite the first interval of each figure" in _flat(capsys.readouterr().out)


def test_item_10_and_11_n_eff_icc_and_equal_pass_hat_k_are_explained(demo: Report) -> None:
    text = _flat(_terminal(demo, 200))
    assert "n_eff is how many independent conversations the evidence is worth" in text
    assert "pass^k is the same at every k" in text


def test_item_14_the_desks_runs_page_shows_the_clustered_interval_and_what_to_cite(
    demo: Report, demo_run: Path, tmp_path: Path
) -> None:
    client = TestClient(create_app(DeskConfig(demo_run.parent)), base_url="http://127.0.0.1")
    page = client.get("/").text
    outcome = demo.outcome
    assert outcome is not None
    assert outcome.critical_sensitivity.short in page and "over 8 vignettes" in page
    assert "Cite the first interval" in page


def test_the_first_screen_of_the_red_team_report_shows_the_missed_self_harm(redteam: Report) -> None:
    first = "\n".join(_terminal(redteam).splitlines()[:24])  # a terminal of 80 × 24
    assert "redteam.buried-self-harm failed in 9 of 10 conversations" in _flat(first)


def test_item_13_a_control_that_failed_does_not_repeat_the_best_case_as_its_summary(
    demo_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    main(["safety-case", str(demo_run), "--hazards", str(ROOT / "examples/triage_hazards.yaml")])
    out = _flat(capsys.readouterr().out)
    assert "about 8835 vignettes (8813 more) if the new ones behave like these" in out
    assert "or at best 112 vignettes (90 more), and only if none of the new ones fails" in out
    assert "Needs 90 more distinct vignettes" not in out


# A count of vignettes said in scenarios (the old words of pass^k, worst-at-k, the gate and the safety case).
_SCENARIOS_COUNTED = re.compile(
    r"\b(?:over|on) \d+ scenarios\b|\bscenarios \(\d+ more\)|\b(?:bootstrap over|distinct) scenarios\b"
)


def test_every_count_of_vignettes_says_vignettes(
    redteam: Report, demo: Report, demo_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pass^k, worst-at-k, the gate's and the safety case's advice count vignettes: JUnit, terminal, HTML
    and the safety case say so, and name the variants where the red team's 168 are variants of 22."""
    from simulator.report.junit import render_junit

    junit = render_junit(redteam)
    assert 'name="pass_hat_k.1" value="87.5% over 22 vignettes (168 variants)"' in junit
    assert 'name="worst_at_k.1" value="89.3% over 22 vignettes (168 variants)"' in junit
    assert "over 22 vignettes" in render_junit(demo) and "variants)" not in render_junit(demo)
    row = redteam.pass_hat_k[0]
    assert (row.vignettes, row.scenarios, row.worst_vignettes) == (22, 168, 22)
    assert row.high - row.low > 0.15  # resampled over 22 vignettes, not 168 variants (0.82-0.92 before)
    terminal = _flat(_terminal(redteam, 200))
    assert "95% CI (bootstrap over vignettes) ┃ vignettes ┃" in terminal
    assert "│ 1 │ 87.5% │ 89.3% │ 22 │" in terminal  # worst-at-k's vignettes column
    capsys.readouterr()
    main(["safety-case", str(demo_run), "--hazards", str(ROOT / "examples/triage_hazards.yaml")])
    case = _flat(capsys.readouterr().out)
    assert "even a flawless result on 22 vignettes" in case and "(vignette correlation ICC" in case
    for name, shown in {
        "junit": junit,
        "terminal": terminal,
        "html": render_html(redteam),
        "safety case": case,
    }.items():
        assert not _SCENARIOS_COUNTED.findall(shown), (name, _SCENARIOS_COUNTED.findall(shown)[:5])
