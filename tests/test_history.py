"""`simulator history`: runs in time order, scenario-set series never joined, the paired clustered test."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.safety.hazards import load_hazard_log
from simulator.safety.history import build_history
from simulator.safety.history_view import history_html
from tests.synthetic import synthetic_outcome_run

HAZARDS = """\
hazards:
  - id: HAZ-1
    title: Missed emergency
    cause: c
    effect: e
    severity: major
    likelihood: low
    controls:
      - id: C-1
        description: d
        criteria: [outcome.triage_level]
        threshold: under_triage <= 5%
"""


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    """Three runs made in this order: a flawed bot, the fixed bot, then the fixed bot on a larger set."""
    flawed = synthetic_outcome_run(tmp_path / "1-flawed", {f"s{i}": [i >= 5, i >= 5] for i in range(10)})
    fixed = synthetic_outcome_run(tmp_path / "2-fixed", {f"s{i}": [True, True] for i in range(10)})
    wider = synthetic_outcome_run(tmp_path / "3-wider", {f"s{i}": [True, True] for i in range(12)})
    return [flawed, fixed, wider]


def test_points_are_in_time_order_and_a_changed_scenario_set_starts_a_new_series(runs: list[Path]) -> None:
    history = build_history(list(reversed(runs)))
    assert [p.run_id for p in history.points] == ["1-flawed", "2-fixed", "3-wider"]
    assert [p.series for p in history.points] == [1, 1, 2]
    assert history.points[2].changed == "scenario set changed (added: s10, s11)"
    under = [p.rates["under_triage"] for p in history.points]
    assert [(r.k, r.n) for r in under] == [(10, 20), (0, 20), (0, 24)]
    assert all(r.clustered is not None for r in under)
    first, second = history.steps
    assert first.comparable and not second.comparable and "not compared" in second.reason
    (test,) = [t for t in first.tests if t.name == "outcome: not under-triaged"]
    # Five scenarios fixed, none worse: the clustered McNemar test over scenarios says better.
    assert (test.scenarios_better, test.scenarios_worse, test.change) == (5, 0, "better")
    assert test.clustered_p_value < 0.05


def test_each_hazard_has_its_bound_per_run(runs: list[Path], tmp_path: Path) -> None:
    log = tmp_path / "h.yaml"
    log.write_text(textwrap.dedent(HAZARDS), encoding="utf-8")
    history = build_history(runs, load_hazard_log(log))
    bounds = [p.hazards["HAZ-1"].bound for p in history.points]
    assert bounds[0] is not None and bounds[1] is not None and bounds[2] is not None
    assert bounds[0] > 0.5 > bounds[1] > bounds[2]  # 12 failure-free scenarios bound it lower than 10


def test_the_terminal_table_fits_80_columns_and_the_html_draws_svg(
    runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html, data = tmp_path / "h.html", tmp_path / "h.json"
    assert main(["history", *map(str, runs), "--html", str(html), "--json", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") >= 6 and max(len(line) for line in out.splitlines()) <= 80
    assert "1→2 not under-triaged: scenarios worse 0, better 5" in out
    page = html.read_text()
    assert page.count("<svg") == 4 and "scenario set changed" in page and "<script" not in page
    assert json.loads(data.read_text())["points"][2]["series"] == 2
    assert history_html(build_history(runs)) == page  # the same folders give the same page
