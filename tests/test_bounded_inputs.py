"""Inputs are bounded by what they are and by bytes (issue 30, items 7, 8 and 10): a FIFO or a device is
refused, not read; every read is capped; YAML aliases are bounded by the text they expand to; a record
nested too deeply is skipped with a note naming it, never a RecursionError that ends the command."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.yamlfile import YAMLProblem, load_yaml
from simulator.record.folder import CONVERSATIONS, VERDICTS, RunFolder
from simulator.safefiles import FileRefused, read_capped
from tests.test_report_support import make_judged_run

DEVICES = ["/dev/zero", "/dev/urandom"]


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _unblock(path: Path) -> threading.Timer:
    """If a reader wrongly blocks on the FIFO, a writer arrives after 5 s and lets the test end (and fail)."""

    def write() -> None:
        with open(path, "wb") as handle:
            handle.write(b"x")

    timer = threading.Timer(5, write)
    timer.daemon = True
    timer.start()
    return timer


@pytest.mark.parametrize("kind", ["fifo", *DEVICES, "folder"])
def test_read_capped_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "f.yaml"
    if kind == "fifo":
        _fifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(kind)  # a device behind a symlink
    with pytest.raises(FileRefused, match="not a regular file"):
        read_capped(path, 1000)


def test_read_capped_counts_bytes_as_it_reads(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * 2001)
    assert read_capped(path, 2001) == b"a" * 2001
    with pytest.raises(FileRefused, match="larger than"):
        read_capped(path, 2000)


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("command", ["validate", "report", "show"])
def test_commands_refuse_special_files_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, command: str
) -> None:
    if command == "validate":
        target = tmp_path / "scenario.yaml"
        argv = ["validate", str(target)]
    else:
        run = make_judged_run(tmp_path / "tiny")
        target = run / CONVERSATIONS
        target.unlink()
        argv = [command, str(run)]
    if kind == "fifo":
        _fifo(target)
        timer = _unblock(target)
    else:
        target.symlink_to(kind)
        timer = None
    capsys.readouterr()
    try:
        assert main(argv) == 2
    finally:
        if timer is not None:
            timer.cancel()
    err = capsys.readouterr().err
    assert "not a regular file" in err and str(target) in err


ALIAS_BOMBS = {
    "one big string": "big: &a '{text}'\nlist: [{aliases}]\n",
    "nested lists": "a: &a ['{text}', '{text}']\nb: &b [*a, *a, *a, *a]\nc: [{aliases_b}]\n",
}


@pytest.mark.parametrize("name", sorted(ALIAS_BOMBS))
def test_yaml_aliases_are_bounded_by_the_text_they_expand_to(tmp_path: Path, name: str) -> None:
    text = ALIAS_BOMBS[name].format(
        text="x" * 500_000, aliases=", ".join(["*a"] * 40), aliases_b=", ".join(["*b"] * 10)
    )
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    with pytest.raises(YAMLProblem, match="MB of text"):
        load_yaml(path)


def test_a_few_aliases_of_small_values_still_load(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {persona: p, goal: g}\nitems: [" + ", ".join(["*b"] * 200) + "]\n")
    assert len(load_yaml(path).data["items"]) == 200


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [5_000, 100_000])
@pytest.mark.parametrize("file", [CONVERSATIONS, VERDICTS])
def test_a_deeply_nested_record_is_skipped_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int, file: str
) -> None:
    run = make_judged_run(tmp_path / "tiny")
    lines = (run / file).read_text().splitlines(keepends=True)
    bad = json.loads(lines[0])
    bad["schema_version"] = 0  # an old record goes through json.loads and migration
    text = json.dumps(bad)
    (run / file).write_text(text[:-1] + ', "x": ' + _deep(depth) + "}\n" + "".join(lines[1:]))
    (run / (file + ".current")).write_text('{"schema_version": 99, "x": ' + _deep(depth) + "}\n")
    model = RunFolder.open(run)
    records = list(model.conversations() if file == CONVERSATIONS else model.verdicts())
    assert len(records) == len(lines) - 1
    err = capsys.readouterr().err
    assert f"{run / file}:1" in err and "nested too deeply" in err and "skipped" in err
    assert main(["report", str(run), "--quiet"]) == 0


def test_a_deeply_nested_manifest_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_judged_run(tmp_path / "tiny")
    (run / "manifest.json").write_text('{"a": ' + _deep(100_000) + "}")
    assert main(["show", str(run)]) == 2
    assert "nested too deeply" in capsys.readouterr().err


def test_the_desk_runs_page_survives_one_bad_folder(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from simulator.serve import DeskConfig, create_app

    runs = tmp_path / "runs"
    good = make_judged_run(tmp_path / "tiny")
    runs.mkdir()
    shutil.copytree(good, runs / "good")
    shutil.copytree(good, runs / "deep")
    (runs / "deep" / "manifest.json").write_text('{"a": ' + _deep(100_000) + "}")
    shutil.copytree(good, runs / "fifo")
    (runs / "fifo" / "manifest.json").unlink()
    _fifo(runs / "fifo" / "manifest.json")
    timer = _unblock(runs / "fifo" / "manifest.json")
    try:
        config = DeskConfig(runs, tmp_path / "tiny", tmp_path / "judges")
        with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
            page = client.get("/")
    finally:
        timer.cancel()
    assert page.status_code == 200
    assert "good" in page.text and "deep" in page.text and "nested too deeply" in page.text
