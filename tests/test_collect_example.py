"""The live demo end to end on loopback (examples/live/demo.py): the triage web app instrumented with the
real OTel SDK exports to `simulator collect`; the queue fills and the planted drift fires the alert."""

from __future__ import annotations

from pathlib import Path

from tests.traces_helpers import every_file_text, require


def test_the_demo_detects_the_planted_drift(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    from examples.live.demo import run_demo

    summary = run_demo(tmp_path / "live", conversations=120, drift_at=0.5, concurrency=8, seed=1)
    assert summary["conversations"] == 120
    assert summary["judge"]["judged"] == summary["judge"]["sampled"] > 0
    assert summary["review_items"] > 0
    assert summary["alert"] == "fail_rate(no-diagnosis-no-prescribing) > 1%"
    # Every conversation behind the alert came after the bot changed.
    assert summary["earliest_conversation_behind_alert"] >= summary["drift_planted_at"]
    written = every_file_text(tmp_path)
    assert "sam.patient@example.org" not in written and "my email is [EMAIL]" in written  # sent, redacted
