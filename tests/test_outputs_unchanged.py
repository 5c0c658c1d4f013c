"""What users read from the shipped suites is unchanged unless a change means it to be (tests/support/outputs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.outputs import CASES, Case, differences


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_shipped_outputs_are_unchanged(case: Case, tmp_path: Path) -> None:
    found = differences(case, tmp_path)
    assert not found, (
        "; ".join(found) + " — if deliberate: python -m tests.support.outputs --update, read the diff"
    )
