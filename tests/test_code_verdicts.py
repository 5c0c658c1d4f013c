"""Every verdict decided in code says so (`decided_by: code`), whichever check made it: outcome, assertion,
tool, environment or red-team checks all build on one base (judging/code_verdict.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("suite", "categories"),
    [
        ("examples/clinic_env/suite.yaml", {"outcome", "tool", "environment"}),
        ("scenarios/redteam/suite.yaml", {"outcome", "redteam"}),
        ("scenarios/triage/suite.yaml", {"outcome"}),
    ],
)
def test_every_code_verdict_is_decided_by_code(
    suite: str, categories: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["run", suite, "--runs", "1", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    code = [v for v in RunFolder.open(tmp_path / "run").verdicts() if v.kind == "code"]
    assert categories <= {v.category for v in code}
    assert {v.decided_by for v in code} == {"code"}, sorted({(v.category, v.decided_by) for v in code})
