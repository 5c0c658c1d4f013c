"""Severity drives findings: a failed critical check is a BUG on any scenario, a major one a WARNING, each
with its counts and the conversations to read, in the terminal and linked in the HTML."""

from __future__ import annotations

from pathlib import Path

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.report.html import render_html
from simulator.report.model import build_report
from tests.test_report_support import record, verdict, write_run

ROOT = Path(__file__).resolve().parent.parent


def test_the_claims_example_summary_shows_its_critical_failure(tmp_path: Path) -> None:
    out = tmp_path / "clinic"
    assert main(
        ["run", str(ROOT / "examples/clinic_env/suite.yaml"), "--out", str(out), "--no-progress"]
    ) in (0, 1)
    report = build_report(load_run(out))
    bugs = [f for f in report.findings if f.level == "bug"]
    claims = next(f for f in bugs if "claim.booked" in f.title)
    assert claims.title == "critical check claim.booked failed in 2 of 5 conversations (2 of 5 vignettes)"
    assert claims.conversations == ["unregistered-routine-cough#0", "unregistered-urgent-fever#0"]
    page = render_html(report)
    anchors = {t.id: i for i, t in enumerate(report.transcripts)}
    assert f'<a href="#t{anchors["unregistered-routine-cough#0"]}">unregistered-routine-cough#0</a>' in page


def test_a_major_failure_is_a_warning_and_a_minor_one_no_finding(tmp_path: Path) -> None:
    records = [record(f"s{i}") for i in range(3)]
    verdicts = [
        verdict(records[0], "tone", "fail", severity="major"),
        verdict(records[1], "tone", "pass", severity="major"),
        verdict(records[0], "typo", "fail", severity="minor"),
        verdict(records[2], "grave", "pass", severity="critical"),
    ]
    report = build_report(load_run(write_run(tmp_path / "run", records, verdicts)))
    found = {f.title: f.level for f in report.findings}
    assert found["major criterion tone failed in 1 of 2 conversations (1 of 2 vignettes)"] == "warning"
    assert not any("typo" in t or "grave" in t for t in found)
