"""Issue 43, class 4: `simulator show` is bounded whatever a record holds: at most MAX_PARTS_SHOWN parts a
turn and MAX_CHARS_SHOWN characters a part or state, each cut saying how much more the record keeps."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.report.show import MAX_CHARS_SHOWN, MAX_PARTS_SHOWN
from tests.desk_support import make_judged_run


def _huge(kind: str) -> list[dict[str, Any]]:
    if kind == "100,000 parts":
        return [{"type": "text", "text": f"p{i}"} for i in range(100_000)]
    if kind == "a 5 MB tool argument":
        return [{"type": "tool_call", "name": "t", "id": "c1", "arguments": {"a": "x" * 5_000_000}}]
    return [{"type": "text", "text": "y" * 3_000_000}]


@pytest.mark.timeout(180)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
@pytest.mark.parametrize("kind", ["100,000 parts", "a 5 MB tool argument", "a 3 MB message"])
def test_show_on_a_huge_record_is_quick_and_says_what_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    run = make_judged_run(tmp_path / "w")
    path = run / "conversations.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["turns"][1].pop("messages", None)
    record["turns"][1]["parts"] = _huge(kind)
    lines[0] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["show", str(run), "--scenario", record["scenario_id"]]) == 0
    out = capsys.readouterr().out
    assert len(out) < (MAX_PARTS_SHOWN + 60) * 200 + 10 * MAX_CHARS_SHOWN
    left_out = r"more\W+parts\W+in\W+this\W+turn" if kind == "100,000 parts" else r"more\W+characters"
    assert re.search(left_out, out)  # the panel may wrap the note
