"""Numbers that say what they cover (issue 11, item 14): the overall pass rate names its unit, what it left
out and when criteria went unjudged; compare says "no pairs" for a criterion judged on neither side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "scenarios" / "triage" / "suite.yaml"


def _run(out: Path, *extra: str) -> Path:
    assert main(["run", str(TRIAGE), "--out", str(out), "--runs", "1", "--no-progress", *extra]) == 0
    return out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("runs")
    return _run(base / "a", "--tags", "cardiac,allergy"), _run(base / "b", "--tags", "cardiac,allergy")


def test_overall_pass_says_what_it_covers(
    two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = two_runs
    report = tmp_path / "r.json"
    assert main(["report", str(run), "--json", str(report), "--html", str(tmp_path / "r.html")]) == 0
    terminal = " ".join(capsys.readouterr().out.split())
    covers = json.loads(report.read_text())["overall_covers"]
    assert "conversations with no failed check, of 4 with a pass or fail verdict" in covers
    assert "left out: 0 errored, 0 with nothing judged" in covers
    assert (
        "4 of the 4 had criteria not judged" in covers and "covers only the checks that were judged" in covers
    )
    assert " ".join(covers.split()) in terminal
    assert "had criteria not judged" in (tmp_path / "r.html").read_text()


def test_a_fully_judged_run_has_no_partial_note(suite_dir: Path, tmp_path: Path) -> None:
    (suite_dir / "crash.yaml").write_text("id: crash-1\npersona: p\ngoal: crash it\n")
    out = tmp_path / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    report = tmp_path / "r.json"
    assert main(["report", str(out), "--json", str(report), "--quiet"]) == 0
    covers = json.loads(report.read_text())["overall_covers"]
    assert "left out: 3 errored" in covers and "not judged" not in covers


def test_compare_says_no_pairs_for_criteria_judged_on_neither_side(
    two_runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_runs
    out = tmp_path / "c.json"
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    metrics = {m["name"]: m for m in json.loads(out.read_text())["metrics"]}
    unpaired = [name for name, m in metrics.items() if m["pairs"] == 0]
    assert unpaired and all(metrics[name]["change"] == "no pairs" for name in unpaired)
    for name in unpaired:
        line = next(line for line in printed.splitlines() if line.startswith(name + " "))
        assert "no pairs" in line and "no significant change" not in line
    assert "…" not in printed and max(len(line) for line in printed.splitlines()) <= 80  # a pipe: 80 columns
    paired = [m for m in metrics.values() if m["pairs"]]
    assert paired and all(m["change"] != "no pairs" for m in paired)
