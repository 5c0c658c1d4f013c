"""Every command shown in docs/outcome-sources.md runs, in order, and prints what the page says it prints
(each `# ...` line under a command: its ` · `-separated pieces appear in the command's output)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "outcome-sources.md"


def _blocks() -> list[list[tuple[list[str], list[str]]]]:
    """Each bash block: its commands, each with the comment lines that follow it."""
    blocks = []
    for body in re.findall(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL):
        steps: list[tuple[list[str], list[str]]] = []
        for line in body.splitlines():
            if line.startswith("simulator "):
                steps.append((shlex.split(line)[1:], []))
            elif line.startswith("# ") and steps:
                steps[-1][1].append(line[2:])
        blocks.append(steps)
    return blocks


def test_the_page_s_commands_run_and_print_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "200")
    steps = [step for block in _blocks() for step in block]
    assert len(steps) >= 7
    for args, said in steps:
        args = [a.replace("runs/", f"{tmp_path}/runs/") for a in args]
        code = main(args)
        out = capsys.readouterr().out
        assert code in (0, 1), (args, out)
        flat = " ".join(out.split())
        for line in said:
            for piece in line.split(" · "):
                assert " ".join(piece.split()) in flat, (args, piece)
