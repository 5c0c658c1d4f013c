"""Every command of docs/authoring-at-scale.md runs as written, in order, on a copy of the repository, and
the figures the page quotes are the ones it prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "authoring-at-scale.md"


def _commands() -> list[list[str]]:
    return [
        shlex.split(line[len("$ simulator ") :])
        for line in PAGE.read_text().splitlines()
        if line.startswith("$ simulator ")
    ]


def test_the_page_shows_the_workflow_and_every_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("scenarios/triage", "judges/triage", "examples"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    commands = _commands()
    assert [c[0] for c in commands] == [
        "validate", "run", "coverage", "draft", "draft", "accept-draft", "reject-draft", "run", "coverage"
    ]  # fmt: skip
    printed = []
    for args in commands:
        code = main(args)
        out = capsys.readouterr()
        assert code == 0, f"simulator {shlex.join(args)}: {out.err}"
        printed.append(out.out)
    page = PAGE.read_text()
    for quoted in re.findall(r"^(HAZ-0\d CTL-0\w+ .*)$", page, flags=re.MULTILINE):
        assert quoted in printed[2], quoted  # the map before, as the page shows it
    refused = re.search(r"^(refused mental-health-crisis-emergency-17: .*)$", page, flags=re.MULTILINE)
    assert refused and refused.group(1) in printed[4]
    assert "48 drafts in drafts" in printed[4] and "(15 refused)" in printed[4]
    assert "accepted suspected-stroke-fast-emergency-01" in printed[5]
    assert "HAZ-02 CTL-02a [neuro]: 3 vignettes" in printed[8]  # one accepted joins the suite
    assert "1 accepted drafts (reviewed by Dr A Clinician)" in printed[8]


def test_the_scripted_new_sample_of_commands_md_runs_without_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "docs" / "commands.md").read_text()
    block = text[text.index("simulator new suite --url") :]
    lines = [line for line in block[: block.index("```")].splitlines() if line.startswith("simulator ")]
    assert [shlex.split(line)[1] for line in lines] == ["new", "new", "new", "validate"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", open(os.devnull))  # noqa: SIM115 - as a script or CI runs it
    for line in lines:
        code = main(shlex.split(line)[1:])
        out = capsys.readouterr()
        assert code == 0, f"{line}: {out.err}"
    assert "1 scenario: ok" in out.out and "1 criterion: ok" in out.out
