"""A lone surrogate escape already stored in a record (written by another program, or by an older version)
never crashes a reader (issue 30, item 13): every report format and `show` read it as U+FFFD."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import CONVERSATIONS, VERDICTS, RunFolder
from tests.test_report_support import make_judged_run

ESCAPES = ["\\ud800", "\\udfff", "\\uDC80", "x\\ud83d"]  # lone high, lone low, upper-case hex, a cut pair


def _poison(path: Path, escape: str) -> None:
    """Put the escape into the first record's text fields (messages, reasoning) as raw JSON text."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = lines[0]
    # A turn's text is its text parts' (record schema 3); `messages` is an older record's.
    for field in ('"messages":["', '"text":"', '"reasoning":"', '"scenario_id":"'):
        first = first.replace(field, field + escape, 1)
    path.write_text(first + "".join(lines[1:]), encoding="utf-8")


@pytest.mark.parametrize("escape", ESCAPES)
def test_reports_read_stored_surrogates(tmp_path: Path, escape: str) -> None:
    run = make_judged_run(tmp_path / "tiny")
    _poison(run / CONVERSATIONS, escape)
    _poison(run / VERDICTS, escape)
    records = list(RunFolder.open(run).conversations())
    assert any("\ufffd" in m for r in records for t in r.turns for m in t.messages)
    out = tmp_path / "out"
    out.mkdir()
    argv = ["report", str(run), "--html", str(out / "r.html"), "--json", str(out / "r.json")]
    assert main([*argv, "--junit", str(out / "r.xml"), "--json-transcripts", "--quiet"]) == 0
    assert main(["show", str(run)]) == 0
    assert "\ufffd" in (out / "r.html").read_text(encoding="utf-8")
