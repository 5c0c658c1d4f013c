"""Terminal escapes reach no terminal by any channel (issue 30, item 16): validate errors (an unknown key or
a file name holding ESC), echoed arguments (`show --scenario`, `gate --require`), scenario tags and ids in
`report`, labeller names in `meta-eval`. One function (`report.visible`) writes them all."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from simulator.cli import main
from tests.desk_support import HOSTILE, hostile_run
from tests.test_report_support import make_judged_run

ESCAPES = ["\x1b]0;pwned\x07", "\x1b[2J", "\x9b31m", "\u202egnp.exe"]
RAW = ["\x1b", "\x9b", "\x07", "\u202e"]


def _clean(text: str) -> bool:
    return not any(control in text for control in RAW)


@pytest.mark.parametrize("escape", ESCAPES)
def test_validate_errors_show_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], escape: str
) -> None:
    named = tmp_path / f"bad{escape.replace('/', '')}.yaml"
    named.write_text(f"id: s1\npersona: p\ngoal: g\n'key{escape}': 1\n")
    assert main(["validate", str(named)]) == 2
    out = capsys.readouterr()
    assert _clean(out.err + out.out) and ("\\x" in out.err or "\\u" in out.err)


@pytest.mark.parametrize("escape", ESCAPES)
def test_echoed_arguments_show_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], escape: str
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    capsys.readouterr()
    assert main(["show", str(run), "--scenario", f"nope{escape}"]) == 2
    assert main(["gate", str(run), "--require", f"nope{escape} <= 0.1"]) == 2
    out = capsys.readouterr()
    assert _clean(out.err + out.out)


def test_report_tags_and_ids_show_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = hostile_run(tmp_path / "hostile")  # tags, ids, state and verdicts hold markup and escapes
    capsys.readouterr()
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr()
    assert _clean(out.out + out.err) and HOSTILE.split()[0][:5] in out.out


@pytest.mark.parametrize("escape", ESCAPES)
def test_meta_eval_labeller_names_show_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], escape: str
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    sheet_dir = tmp_path / "sheet"
    assert main(["labels", "export", str(run), "--criterion", "tone", "--out", str(sheet_dir)]) == 0
    sheet = sheet_dir / "labels.csv"
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    for row in rows:
        row["label"] = "pass"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    # A name with an escape is refused at the door (simulator/names.py), saying so without the escape...
    assert main(["labels", "import", str(run), str(sheet), "--labeller", f"dr{escape}one"]) == 2
    assert _clean(capsys.readouterr().err)
    for name in ("dr-one", "dr-two"):
        assert main(["labels", "import", str(run), str(sheet), "--labeller", name]) == 0
    # ...and one already in a folder (written before, or by hand) is shown as an escape, never obeyed.
    labels = run / "labels.jsonl"
    labels.write_text(labels.read_text().replace("dr-one", json.dumps(f"dr{escape}one")[1:-1]))
    capsys.readouterr()
    main(["meta-eval", str(run)])
    out = capsys.readouterr()
    assert _clean(out.out + out.err) and "dr" in out.out
