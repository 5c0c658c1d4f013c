"""`safety-case --verify` trusts neither the sign-off line nor names: the archived document and the line's
own record must be there and re-hash to what the line says, and sign-offs are matched to runs and hazard
logs by content, not by a folder's or a file's name (repro5)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import MANIFEST
from simulator.safety.signoffs import SignOffBook
from tests.synthetic import synthetic_outcome_run
from tests.test_safety_file import _log

PLAN: dict[str, list[bool | str | None]] = {f"s{i}": [True, i != 0] for i in range(4)}


def _signed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A run, its hazard log and the desk, signed once (reject: no justification needed)."""
    run = synthetic_outcome_run(tmp_path / "runs" / "run-a", PLAN)
    log, desk = _log(tmp_path), tmp_path / "desk"
    sign = ["safety-case", str(run), "--hazards", str(log), "--quiet", "--desk", str(desk), "--sign"]
    assert main([*sign, "--name", "Dr Ada", "--role", "CSO", "--decision", "reject"]) in (1, 3)
    return run, log, desk


def _verify(run: Path, log: Path, desk: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["safety-case", str(run), "--hazards", str(log), "--desk", str(desk), "--verify"])
    said = capsys.readouterr()
    return code, said.out + said.err


def _document(desk: Path) -> Path:
    (signoff,) = SignOffBook(desk).all()
    assert signoff.document is not None
    return desk / signoff.document


def _delete_archive(run: Path, log: Path, desk: Path) -> None:
    _document(desk).unlink()
    _document(desk).with_suffix(".html").unlink()


def _edit_archive(run: Path, log: Path, desk: Path) -> None:
    path = _document(desk)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["hazards"][0]["controls"][0]["failed"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")


def _edit_decision(run: Path, log: Path, desk: Path) -> None:
    book = desk / "signoffs.jsonl"
    line = book.read_text(encoding="utf-8")
    assert '"decision":"reject"' in line
    book.write_text(line.replace('"decision":"reject"', '"decision":"approve"'), encoding="utf-8")


def _delete_record(run: Path, log: Path, desk: Path) -> None:
    shutil.rmtree(desk / "documents" / "signoffs")


@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        (_delete_archive, "the archived document"),
        (_edit_archive, "was edited since signing"),
        (_edit_decision, 'the sign-off line was edited since signing: decision: "reject" -> "approve"'),
        (_delete_record, "the archived sign-off record"),
    ],
    ids=["deleted archive", "edited archive", "edited decision", "deleted record"],
)
def test_verify_fails_when_the_archive_or_the_line_was_touched(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    tamper: Callable[[Path, Path, Path], None],
    said: str,
) -> None:
    run, log, desk = _signed(tmp_path)
    assert _verify(run, log, desk, capsys)[0] == 0
    tamper(run, log, desk)
    code, out = _verify(run, log, desk, capsys)
    assert code == 1 and said in out and "verified" not in out, out


def test_a_renamed_hazard_log_with_the_same_content_still_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, log, desk = _signed(tmp_path)
    renamed = log.rename(log.with_name("hazards-v2.yaml"))
    code, out = _verify(run, renamed, desk, capsys)
    assert code == 0 and "verified: Dr Ada (CSO, reject" in out, out
    # The same name with other content is the same log edited: reported as changed, never verified.
    edited = renamed.rename(log)
    edited.write_text(
        edited.read_text(encoding="utf-8").replace("Delayed care.", "Late care."), encoding="utf-8"
    )
    code, out = _verify(run, edited, desk, capsys)
    assert code == 1 and "hazard_log_sha256" in out, out


def test_another_run_in_a_folder_of_the_same_name_is_not_the_one_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, log, desk = _signed(tmp_path)
    other = synthetic_outcome_run(tmp_path / "elsewhere" / "run-a", {f"s{i}": [True, True] for i in range(4)})
    manifest = json.loads((other / MANIFEST).read_text(encoding="utf-8"))
    manifest["created_at"] = "2020-01-01T00:00:00+00:00"
    (other / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    code, out = _verify(other, log, desk, capsys)
    assert code == 2 and "no sign-off of these runs" in out, out
    assert _verify(run, log, desk, capsys)[0] == 0
