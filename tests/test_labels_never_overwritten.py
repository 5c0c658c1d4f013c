"""`labels export` never overwrites a sheet that holds labels (issue 30, item 2): a filled-in sheet is
clinicians' work; a second export into the same folder refuses with the fix, and the sheet is unchanged."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator.cli import main
from tests.test_report_support import make_judged_run


def _fill(sheet: Path, how: str) -> None:
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    if how == "label":
        rows[0]["label"] = "pass"
    elif how == "note":
        rows[-1]["notes"] = "borderline: asked twice"
    elif how == "extra-column":
        rows[1]["notes"] = ""
        rows[1][None] = ["a stray cell"]  # type: ignore[index]
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(rows[0])[:4])
        for row in rows:
            writer.writerow(
                [row["conversation_id"], row["criterion_id"], row["label"], row["notes"], *row.get(None, [])]
            )


@pytest.mark.parametrize("how", ["label", "note", "extra-column", "not-a-sheet"])
def test_a_second_export_never_overwrites_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    out = tmp_path / "labels"
    argv = ["labels", "export", str(run), "--criterion", "tone", "--out", str(out)]
    assert main(argv) == 0
    sheet = out / "labels.csv"
    if how == "not-a-sheet":
        sheet.write_text("my own notes about these transcripts\nkeep them\n", encoding="utf-8")
    else:
        _fill(sheet, how)
    before = sheet.read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(sheet) in err and "--out" in err
    assert sheet.read_bytes() == before


def test_an_empty_sheet_may_be_written_again_and_the_simulator_sheet_is_guarded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    out = tmp_path / "labels"
    argv = ["labels", "export", str(run), "--criterion", "tone", "--out", str(out)]
    assert main(argv) == 0
    assert main(argv) == 0  # nothing filled in yet: a fresh sheet replaces an empty one
    sim = tmp_path / "sim"
    sim.mkdir()
    (sim / "labels.csv").write_text("conversation_id,criterion_id,label,notes\nc#0,x,fail,\n")
    capsys.readouterr()
    assert main(["labels", "export", str(run), "--simulator", "--out", str(sim)]) == 2
    assert "holds labels already" in capsys.readouterr().err
    assert "fail" in (sim / "labels.csv").read_text()
