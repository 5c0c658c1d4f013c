"""Outcome sources on imported conversations (simulator/traces/): the shipped OTel traces and transcripts,
judged with the demo suite and `--outcome-source`, get their outcome from what the bot told the person, with
the deciding quote, whether or not the trace carries an expected level."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.analysis.outcome import decided_outcome, outcome_metrics
from simulator.analysis.outcome_agreement import outcome_agreement
from simulator.analysis.rundata import load_run
from simulator.cli import main

ROOT = Path(__file__).resolve().parent.parent
SUITE = str(ROOT / "scenarios/triage/suite.yaml")


def _imported(source: str, out: Path, *sources: str) -> Path:
    assert main(["import", str(ROOT / source), "--out", str(out)]) == 0
    assert main(["judge", str(out), "--suite", SUITE, "--outcome-source", *sources]) == 0
    return out


def test_imported_otel_traces_get_their_outcome_from_the_bot_s_messages(tmp_path: Path) -> None:
    run = load_run(_imported("examples/traces/otel_traces.json", tmp_path / "real", "messages"))
    decided = {r.id.split("#")[0]: decided_outcome(run, r) for r in run.conversations}
    got = {cid: (d.value, d.quote) for cid, d in decided.items() if d is not None}
    assert got["conv-1001"] == ("emergency", "Call 999 now and chew an aspirin if you are not allergic.")
    assert got["conv-1002"][0] == "self_care" and got["conv-1003"][0] == "emergency"
    assert len(got) == 4  # every conversation has its recorded outcome, though none carries an expectation
    agreement = outcome_agreement(run)
    assert agreement is not None and agreement.mix == {"self_care": 2, "emergency": 2}


@pytest.mark.parametrize("sources", [("messages", "state"), ("state",)])
def test_imported_transcripts_report_under_triage_from_messages(
    sources: tuple[str, ...], tmp_path: Path
) -> None:
    run = load_run(_imported("examples/traces/transcripts.jsonl", tmp_path / "real", *sources))
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.source == list(sources)
    # Two under-triaged conversations either way: real-002 told "He needs to be seen today." (urgent) for an
    # emergency, real-008 sent home for a GP case.
    assert (metrics.under_triage.k, metrics.under_triage.n) == (2, 10)
    by_id = {c.conversation_id: c for c in metrics.cases}
    if sources[0] == "messages":
        assert (by_id["real-002#0"].source, by_id["real-002#0"].quote) == (
            "messages",
            "He needs to be seen today.",
        )
