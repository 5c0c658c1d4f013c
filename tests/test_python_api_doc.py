"""docs/python-api.md runs as written: every ```python block, in order, in one namespace, inside a running
event loop as a Jupyter notebook runs its cells (top-level `await` allowed, `simulator.run` on its worker
thread), from a folder that holds the repository's scenarios, judges and examples."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "python-api.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


async def _run_cells(cells: list[str], namespace: dict[str, Any]) -> None:
    for index, cell in enumerate(cells):
        code = compile(cell, f"{DOC.name} block {index + 1}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(code, namespace)  # a coroutine when the cell awaits, as in a notebook
        if asyncio.iscoroutine(outcome):
            await outcome


def test_the_walk_through_runs_like_a_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("scenarios", "judges", "examples"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    monkeypatch.chdir(tmp_path)
    cells = blocks()
    assert len(cells) >= 7
    namespace: dict[str, Any] = {"__name__": "__main__"}
    asyncio.run(_run_cells(cells, namespace))
    printed = capsys.readouterr().out
    result, cardiac, board, done = (namespace[k] for k in ("result", "cardiac", "board", "done"))
    assert (tmp_path / "report.html").read_text().startswith("<!doctype html>")
    assert (tmp_path / "leaderboard.html").is_file()
    assert result.overall.n > 0 and str(result.folder).startswith("runs")
    assert cardiac.under_triage.n > 0 and cardiac.report.run.bot == "python:examples.triage_bot:make_bot"
    assert set(board.results) == {"demo", "fixed"} and board.best is not None
    # The demo bot's known flaw: it under-triages cardiac cases; the fixed bot does not do worse.
    assert board["fixed"].under_triage.k <= board["demo"].under_triage.k
    assert done.session.finished == 0 and done.session.skipped == cardiac.session.finished
    for name in ("function", "class", "object", "module"):
        assert re.search(rf"^{name} \['(pass|fail)'\]$", printed, re.MULTILINE), printed[-3000:]
