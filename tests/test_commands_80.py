"""`judge`, `meta-eval`, `calibrate`, the terminal leaderboard and `compare-populations` at 80 columns (a CI
log, a pipe; issue 31, item 14): drawn by the report's renderer (draw_terminal.py, table_print.py), so no
ellipsis, no interval end lost, no id cut; `calibrate` prints its result once."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from rich.cells import cell_len

from simulator.analysis.calibrate import calibrate, calibrate_labels
from simulator.analysis.leaderboard import build_leaderboard
from simulator.analysis.meta_eval import meta_evaluate
from simulator.analysis.populations import compare_populations
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "triage" / "suite.yaml"
MATRIX = ROOT / "scenarios" / "triage-matrix" / "suite.yaml"
LONG_FOLDER = "labels-written-by-the-clinical-review-panel-in-the-second-week-of-the-pilot"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The demo suite twice (2 repeats, then 1), and a labels CSV in a folder with a long name."""
    root = tmp_path_factory.mktemp("eighty")
    first, second = root / "run", root / "run2"
    assert main(["run", str(SUITE), "--out", str(first), "--runs", "2", "--no-progress"]) == 0
    assert main(["run", str(SUITE), "--out", str(second), "--runs", "1", "--no-progress"]) == 0
    ids = sorted(v.conversation_id for v in RunFolder.open(first).verdicts() if v.kind == "code")
    labels = root / LONG_FOLDER / "labels.csv"
    labels.parent.mkdir()
    with labels.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["conversation_id", "criterion_id", "label"])
        writer.writerows(
            [c, "outcome.triage_level", "fail" if i % 5 == 0 else "pass"] for i, c in enumerate(ids)
        )
    return first, second, labels


def _at_80(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


def _whole(out: str, tokens: set[str]) -> None:
    """No ellipsis, and every token (an id, a count, each end of an interval) is printed unbroken."""
    assert "…" not in out
    words = set(out.split())
    words |= {w.rstrip(":") for w in words}
    missing = {t for t in tokens if t not in words}
    assert not missing, missing


def _tables_fit(out: str, until: str | None = None) -> None:
    """Every line rich drew is at most 80 columns (the plain `print` lines after `until` wrap in a terminal)."""
    drawn = out if until is None else out[: out.index(until)]
    assert max(cell_len(line) for line in drawn.splitlines()) <= 80


def test_judge_summary_fits_80_columns(
    runs: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = runs[0]
    out = _at_80(monkeypatch, capsys, ["judge", str(run)])
    stored = [v for v in RunFolder.open(run).verdicts() if not v.is_sample and v.kind != "fidelity"]
    criteria = {v.criterion_id for v in stored}
    outcome = [v.result for v in stored if v.criterion_id == "outcome.triage_level"]
    counts = f"{outcome.count('pass')}/{outcome.count('fail')}/0/0/0"
    _whole(out, criteria | {counts, "unverified", "cached/input"})
    assert len(criteria) >= 8  # every criterion has its row
    _tables_fit(out[out.index("\n", out.index("judged ")) :])


def test_meta_eval_shows_every_interval_whole(
    runs: tuple[Path, Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run, _, labels = runs
    copy = tmp_path / "labelled"
    copy.mkdir()
    for name in ("manifest.json", "conversations.jsonl", "verdicts.jsonl"):
        (copy / name).write_bytes((run / name).read_bytes())
    flipped = tmp_path / "ben.csv"
    text = (
        labels.read_text().replace(",pass\n", ",x\n").replace(",fail\n", ",pass\n").replace(",x\n", ",fail\n")
    )
    flipped.write_text(text)
    assert main(["labels", "import", str(copy), str(labels), "--labeller", "ana"]) == 0
    assert main(["labels", "import", str(copy), str(flipped), "--labeller", "ben"]) == 0
    out = _at_80(monkeypatch, capsys, ["meta-eval", str(copy), "--replicates", "200"])
    result = meta_evaluate(load_run(copy), replicates=200)
    tokens: set[str] = set()
    for group in [*result.criteria, *result.categories]:
        for row in [*group.judge, *group.humans]:
            tokens |= set(row.macro_f1.short.split()) | set(row.kappa.short.split())
            tokens |= set(row.false_pass.short.split())
    _whole(out, tokens)
    _tables_fit(out)
    # The panel (labels in the run folder) at 80 columns as well.
    out = _at_80(monkeypatch, capsys, ["calibrate", str(copy)])
    panel = calibrate_labels(load_run(copy))
    cells = {
        w
        for c in panel.criteria
        for p in [*c.judge, *c.between_labellers]
        for v in p.cells().values()
        for w in v.split()
    }
    _whole(out, cells)
    _tables_fit(out)


def test_calibrate_prints_its_result_once_and_keeps_the_path_whole(
    runs: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _, labels = runs
    out = _at_80(monkeypatch, capsys, ["calibrate", str(run), str(labels)])
    (criterion,) = calibrate(load_run(run), labels).criteria
    assert out.count("raw agreement") == 1
    assert out.count("human (rows) × judge") == 1
    assert out.count("false passes hide real failures") == (1 if criterion.false_pass.k else 0)
    tokens = set(criterion.false_pass.short.split()) | set(criterion.agreement.short.split())
    # The labels' path folds across lines rather than being cut: every character is there, in order.
    assert str(labels) in out.replace("\n", "")
    _whole(out, tokens)
    _tables_fit(out)


def test_the_leaderboard_fits_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = tmp_path / "a-matrix-folder-with-a-long-name-that-a-rule-would-cut-short-at-eighty"
    assert main(["run", str(MATRIX), "--out", str(matrix), "--no-progress"]) == 0
    out = _at_80(monkeypatch, capsys, ["report", str(matrix)])
    board = build_leaderboard(matrix)
    tokens = {matrix.name}
    for row in board.cells:
        for view in (row.quality, row.critical_sensitivity, row.under_triage):
            if view is not None and view.rate is not None:
                tokens.add(f"{view.k}/{view.n}")
    _whole(out, tokens)
    _tables_fit(out)


def test_compare_populations_is_no_longer_160_columns(
    runs: tuple[Path, Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sim, real, _ = runs
    out = _at_80(
        monkeypatch, capsys, ["compare-populations", str(sim), str(real), "--json", str(tmp_path / "p.json")]
    )
    result = compare_populations(sim, real)
    tokens = {f"{row.gap:.2f}" for row in result.rows}
    for row in result.rows:
        tokens |= set(row.simulated.split()) | set(row.difference.split())
    _whole(out, tokens)
    _tables_fit(out, until="gap: KS distance")
    assert json.loads((tmp_path / "p.json").read_text())["rows"]
