"""Files a command writes (issue 11, item 7): a path it cannot write is one clear line before any work, and a
reader that stops reading (`| head`) never costs the files asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def run(suite_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    return out


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    lines = err.strip().splitlines()  # one line, or a title and the one problem's line
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  ") and "(1 problem)" in lines[0])
    return err


@pytest.mark.parametrize("flag", ["--html", "--json", "--junit"])
def test_report_outputs_into_a_missing_folder_or_onto_a_folder(
    run: Path, tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "folder" / "r.out"
    assert "does not exist; create it first" in _error(capsys, ["report", str(run), flag, str(missing)])
    assert "that is a folder" in _error(capsys, ["report", str(run), flag, str(tmp_path)])
    a_file = tmp_path / "plain"
    a_file.write_text("")
    assert "is a file, not a folder" in _error(capsys, ["report", str(run), flag, str(a_file / "r.out")])


@pytest.mark.parametrize("command", ["compare", "calibrate"])
def test_compare_and_calibrate_json_paths_are_checked_first(
    run: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    second = "labels.csv" if command == "calibrate" else str(run)
    argv = [command, str(run), second, "--json", str(tmp_path / "missing" / "x.json")]
    assert "does not exist" in _error(capsys, argv)


def test_run_out_naming_an_existing_file(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "taken"
    target.write_text("mine")
    err = _error(capsys, ["run", str(suite_dir / "suite.yaml"), "--out", str(target), "--no-progress"])
    assert "a file of that name exists" in err and target.read_text() == "mine"
    err = _error(
        capsys, ["run", str(suite_dir / "suite.yaml"), "--out", str(target / "sub"), "--no-progress"]
    )
    assert str(target) in err


@pytest.mark.parametrize("command", ["report", "show"])
def test_a_closed_pipe_loses_no_file_and_no_exit_status(run: Path, tmp_path: Path, command: str) -> None:
    files = [tmp_path / "r.json", tmp_path / "r.html"]
    extra = ["--json", str(files[0]), "--html", str(files[1])] if command == "report" else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "simulator", command, str(run), *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader went away before the first line (`| head -0`)
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err
    if command == "report":
        assert all(path.stat().st_size > 0 for path in files)


@pytest.mark.parametrize(
    "content",
    [
        b"conversation_id,criterion_id,label\nchest-1#0,x,caf\xe9\n",
        b"\x00\x01\x02binary\x00",
        b"\xff\xfe\x00\x00",
    ],
    ids=["latin-1", "nul-bytes", "utf-32-bom"],
)
def test_unreadable_labels_csv_is_one_clear_line(
    run: Path, tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_bytes(content)
    err = _error(capsys, ["calibrate", str(run), str(labels)])
    assert str(labels) in err


@pytest.mark.parametrize("content", [b"item_id,intent\nx,caf\xe9\n", b"\x89PNG\r\n\x1a\n\x00\x00\x00"])
def test_unreadable_golden_csv_is_one_clear_line(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    items = tmp_path / "items.csv"
    items.write_bytes(content)
    err = _error(capsys, ["validate", str(items)])
    assert str(items) in err
