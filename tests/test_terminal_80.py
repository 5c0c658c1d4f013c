"""The terminal report at 80 columns and through a pipe (issue 11, item 13): no line wider than the
terminal, no ellipsis, no column dropped, no number, rate or id broken across lines; tables too wide for
the width are printed without borders, or row by row, instead of being cut."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.report.model import Report, build_report
from simulator.report.terminal import render_terminal

ROOT = Path(__file__).resolve().parent.parent
LONG = "a-very-long-scenario-identifier-that-a-domain-expert-wrote-"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "run"
    suite = ROOT / "scenarios" / "triage" / "suite.yaml"
    assert main(["run", str(suite), "--out", str(out), "--runs", "2", "--no-progress"]) == 0
    return out


@pytest.fixture
def long_ids(suite_dir: Path, tmp_path: Path) -> Path:
    """Scenario ids and tags far longer than a table column, and errored conversations."""
    (suite_dir / "long.yaml").write_text(
        f"- {{id: {LONG}01, persona: p, goal: crash it, tags: [{LONG}tag]}}\n"
        f"- {{id: {LONG}02, persona: p, goal: get help, expected: {{triage_level: emergency}}}}\n"
    )
    out = tmp_path / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    return out


def _render(report: Report, width: int) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
    render_terminal(report, console, everything=True)  # every row, the passing ones too
    return buffer.getvalue()


def _must_be_whole(report: Report) -> set[str]:
    """Ids and every token of every rate shown: none may be cut or broken across lines."""
    tokens = {row.id for row in report.criteria} | {row.id for row in report.scenarios}
    tokens |= {tag.tag for tag in report.tags}
    for rate in [
        report.overall,
        *(r.fail_rate for r in report.criteria),
        *(s.pass_rate for s in report.scenarios),
    ]:
        tokens |= set(rate.short.split())
    return tokens


def _check(text: str, report: Report, width: int) -> None:
    lines = text.splitlines()
    assert max(cell_len(line) for line in lines) <= width
    assert "…" not in text
    words = set(text.split())
    words |= {word.rstrip(":") for word in words}  # `header: value` in the row-by-row form
    missing = {t for t in _must_be_whole(report) if t not in words and t.strip("();") not in words}
    assert not missing, missing
    for header in (
        "unverified",
        "cost",
        "hits",
        "p95",
        "provider",
        *(["decision"] if report.outcome else []),
    ):
        assert header in words  # no column silently dropped


@pytest.mark.parametrize("width", [80, 100, 64])
def test_the_demo_report_fits_without_cutting(demo: Path, width: int) -> None:
    report = build_report(load_run(demo))
    text = _render(report, width)
    _check(text, report, width)
    if width >= 80:
        assert "┏" in text  # most tables still fit as tables


@pytest.mark.parametrize("width", [80, 120])
def test_long_ids_switch_to_rows_instead_of_cutting(long_ids: Path, width: int) -> None:
    report = build_report(load_run(long_ids))
    text = _render(report, width)
    _check(text, report, width)
    if width == 80:
        assert f"• {LONG}01" in text  # a table that cannot fit is printed row by row


def test_through_a_pipe_the_report_is_80_columns(demo: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-m", "simulator", "report", str(demo), "--all"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "\x1b[" not in out  # plain text in a pipe
    _check(out, build_report(load_run(demo)), 80)
