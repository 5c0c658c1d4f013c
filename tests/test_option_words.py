"""A message the command line and the Python API both reach names the option in both forms.

Before, `simulator.run(..., out=path)` was told `--out {path}: a file of that name exists`, a run aborted
by `RunOptions(max_errors=0)` to finish with `simulator run --resume ... --retry-errors`, and `tags=`,
`parse_shard` the same in flags only: a Python caller was told to use flags it never typed. Now each such
message takes its words from one home (`simulator.errors.in_both` / `option_forms`, the home
`--judge-model, or judge_model= in Python` already had): `--out X, or out='X' in Python`. Tested
through the Python API and the command line, with the same inputs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.api.options import parse_shard
from simulator.cli import main
from simulator.errors import UserError

BOTS = """
def make():
    return Fine()

def make_broken():
    return Broken()

class Fine:
    def send(self, text):
        return "hello"

class Broken:
    def send(self, text):
        raise RuntimeError("the bot is down")
"""

SUITE = """\
name: words
bot: {{type: python, factory: 'words_bots_mod:{factory}'}}
user: {{model: offline}}
scenarios: {{paths: [scenarios]}}
runs: 2
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "words_bots_mod.py").write_text(BOTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("words_bots_mod", None)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s.yaml").write_text(
        "id: s\npersona: p\ngoal: g\nmax_turns: 2\ntags: [chest]\n"
    )
    for factory in ("make", "make_broken"):
        (tmp_path / f"{factory}.yaml").write_text(SUITE.format(factory=factory))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _taken_by_a_file(folder: Path) -> Path:
    (folder / "a-file").write_text("mine")
    return folder / "a-file"


def _taken_by_other_files(folder: Path) -> Path:
    (folder / "other").mkdir()
    (folder / "other" / "notes.txt").write_text("mine")
    return folder / "other"


def _under_a_file(folder: Path) -> Path:
    (folder / "plain").write_text("mine")
    return folder / "plain" / "run"


OUT = {
    "a file": (_taken_by_a_file, "a file of that name exists"),
    "a folder of other files": (_taken_by_other_files, "the folder holds other files and no run"),
    "under a file": (_under_a_file, "cannot create the run folder"),
}


def _python(run: Any) -> str:
    with pytest.raises(UserError) as caught:
        run()
    return str(caught.value)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err


@pytest.mark.parametrize("case", sorted(OUT))
def test_a_run_folder_that_cannot_be_made_names_out_in_both_forms(
    folder: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    make, reason = OUT[case]
    out = make(folder)
    words = f"--out {out}, or out={str(out)!r} in Python: {reason}"
    said = _python(lambda: simulator.run(folder / "make.yaml", out=out))
    assert words in said, said
    assert words in _cli(capsys, "run", str(folder / "make.yaml"), "--out", str(out), "--no-progress")


def test_an_aborted_run_says_how_to_finish_it_in_both_forms(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = simulator.RunOptions(max_errors=0, progress=False)
    said = _python(lambda: simulator.run(folder / "make_broken.yaml", out=folder / "a", options=options))
    assert "more than --max-errors 0, or RunOptions(max_errors=0) in Python" in said, said
    assert f"simulator.resume({str(folder / 'a')!r}, retry_errors=True) in Python" in said, said
    err = _cli(
        capsys, "run", "make_broken.yaml", "--out", str(folder / "b"), "--max-errors", "0", "--no-progress"
    )
    assert "more than --max-errors 0, or RunOptions(max_errors=0) in Python" in err, err
    assert f"simulator run --resume {folder / 'b'} --retry-errors, or simulator.resume(" in err, err


@pytest.mark.parametrize("text", ["5/2", "x", "0/3"])
def test_a_bad_shard_names_both_forms(folder: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    words = f"--shard {text}, or parse_shard({text!r}) in Python: write i/K"
    assert words in _python(lambda: parse_shard(text))
    assert words in _cli(capsys, "run", "make.yaml", "--out", str(folder / "r"), "--shard", text)


@pytest.mark.parametrize("tags", [["nope"], ["ches"]])
def test_tags_that_match_nothing_name_both_forms(
    folder: Path, capsys: pytest.CaptureFixture[str], tags: list[str]
) -> None:
    words = "--tags, or tags= in Python"
    assert words in _python(lambda: simulator.run(folder / "make.yaml", tags=tags, out=folder / "r"))
    assert words in _cli(capsys, "run", "make.yaml", "--out", str(folder / "r"), "--tags", *tags)
