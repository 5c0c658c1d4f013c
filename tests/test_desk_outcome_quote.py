"""The desk's transcript reader marks the sentence that decided a conversation's outcome, and the patient's
red flag that set its floor, escaped (simulator/serve/: the report's highlighter)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

from starlette.testclient import TestClient

from simulator.cli import main
from simulator.serve import create_app
from simulator.serve.config import DeskConfig

ROOT = Path(__file__).resolve().parent.parent
PATIENT = "chest pressure <b>since noon</b> & sweating"
DECIDING = "Please book an appointment with your GP <script>alert(1)</script> this week."


def _imported(tmp_path: Path) -> Path:
    """One live-style conversation (no expected level), imported and judged from messages."""
    line = {
        "conversation_id": "web-1",
        "messages": [
            {"role": "user", "content": PATIENT},
            {"role": "assistant", "content": "How old are you?"},
            {"role": "user", "content": "61"},
            {"role": "assistant", "content": DECIDING},
        ],
    }
    source = tmp_path / "live.jsonl"
    source.write_text(json.dumps(line) + "\n", encoding="utf-8")
    runs = tmp_path / "runs"
    assert main(["import", str(source), "--out", str(runs / "live")]) == 0
    suite = str(ROOT / "scenarios/triage/suite.yaml")
    assert main(["judge", str(runs / "live"), "--suite", suite, "--outcome-source", "messages"]) == 0
    return runs


def test_the_reader_marks_the_deciding_quote_and_the_red_flag_escaped(tmp_path: Path) -> None:
    runs = _imported(tmp_path)
    desk = DeskConfig(runs, tmp_path / "scenarios", tmp_path / "judges")
    client = TestClient(create_app(desk), base_url="http://127.0.0.1")
    page = client.get(f"/runs/live/c/{quote('web-1#0')}").text
    marked = (
        '<mark class="ev" data-criteria="outcome.triage_level" title="evidence for outcome.triage_level">'
    )
    # The bot's deciding sentence (a GP appointment) and the patient's words (an emergency red flag).
    assert (
        marked
        + "Please book an appointment with your GP &lt;script&gt;alert(1)&lt;/script&gt; this week.</mark>"
        in page
    )
    assert marked + "chest pressure &lt;b&gt;since noon&lt;/b&gt; &amp; sweating</mark>" in page
    assert "<script>alert(1)" not in page and "<b>since noon" not in page
    # The case is listed as under-triage against the floor, with the patient's words.
    report = client.get("/runs/live/report").text
    assert "at least emergency" in report and "the patient said: chest pressure" in report
