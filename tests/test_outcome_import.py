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
    assert len(got) == 4  # every conversation has its recorded outcome, though none was given an expectation
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


def _truth(path: Path) -> dict[str, tuple[str, str]]:
    """Each shipped transcript's (expected, recorded) level, read from the file itself."""
    import json

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {
        f"{r['conversation_id']}#0": (r["expected"]["triage_level"], r["final_state"]["triage_level"])
        for r in rows
    }


def test_the_shipped_transcripts_figures_from_messages_equal_their_known_truth(tmp_path: Path) -> None:
    truth = _truth(ROOT / "examples/traces/transcripts.jsonl")
    levels = ["self_care", "gp", "urgent", "emergency"]
    under = {c for c, (e, a) in truth.items() if levels.index(a) < levels.index(e)}
    emergencies = [c for c, (e, _) in truth.items() if e == "emergency"]
    run = load_run(_imported("examples/traces/transcripts.jsonl", tmp_path / "real", "messages", "state"))
    decided = {r.id: decided_outcome(run, r) for r in run.conversations}
    # Every conversation is decided by what the bot told the patient, with the sentence that decided it.
    assert {cid: (d.source, d.value) for cid, d in decided.items() if d is not None} == {
        cid: ("messages", actual) for cid, (_, actual) in truth.items()
    }
    assert all(d is not None and d.quote for d in decided.values())
    metrics = outcome_metrics(run)
    assert metrics is not None
    assert (metrics.under_triage.k, metrics.under_triage.n) == (len(under), len(truth))
    assert {c.conversation_id for c in metrics.cases if c.kind == "under"} == under
    assert all(c.source == "messages" and c.quote for c in metrics.cases)
    sensitivity = metrics.critical_sensitivity
    assert (sensitivity.k, sensitivity.n) == (
        sum(truth[c][1] == "emergency" for c in emergencies),
        len(emergencies),
    )
    assert metrics.red_flag_under_triage is None  # every conversation carries its expected level
    # The vocabulary's red flags checked against those levels: none flags too high; the dehydrated, drowsy
    # father (real-002, an emergency) is flagged urgent only ("hasn't had a drink"): a rule missing.
    check = metrics.red_flag_check
    assert check is not None and (check.checked, check.above_expected) == (len(truth), [])
    assert (check.critical, check.critical_below) == (len(emergencies), ["real-002#0"])


def test_otel_traces_imported_without_their_expected_level_are_held_to_the_patient_s_red_flags(
    tmp_path: Path,
) -> None:
    run = load_run(_imported("examples/traces/otel_traces.json", tmp_path / "otel", "messages", "state"))
    flags = {r.id.split("#")[0]: decided_outcome(run, r) for r in run.conversations}
    got = {cid: (d.red_flag.value, d.red_flag.quote) for cid, d in flags.items() if d and d.red_flag}
    # Chest pain going into the arm, and a rash that does not fade: both call for 999; a sore throat and a
    # twisted ankle flag nothing.
    assert set(got) == {"conv-1001", "conv-1003"}
    assert got["conv-1001"][0] == "emergency" and "crushing pain in my chest" in got["conv-1001"][1]
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.red_flag_under_triage is not None
    floor = metrics.red_flag_under_triage
    assert (floor.k, floor.n, metrics.red_flag_left_out) == (0, 2, 2)  # the bot said 999 both times
    assert metrics.over_triage.n == 0  # a floor says nothing of over-triage
    # The gate names it: two conversations are too few to show 50% (the one-sided bound on 2 is 77.6%), so
    # that requirement is undecidable (exit 3), not met or failed.
    run_folder = str(tmp_path / "otel")
    assert main(["gate", run_folder, "--require", "red_flag_under_triage <= 80%"]) == 0
    assert main(["gate", run_folder, "--require", "red_flag_under_triage <= 50%"]) == 3


def test_otel_traces_with_the_nurse_s_level_give_what_the_docs_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/outcome-sources.md: the shipped traces carry the nurse's level (`app.nurse_disposition`, on each
    # conversation's last span); named on import, all four are measured exactly, through the real commands.
    out = str(tmp_path / "otel-nurse")
    assert main(["import", str(ROOT / "examples/traces/otel_traces.json"), "--out", out, "--suite", SUITE,
                 "--expected-attribute", "app.nurse_disposition"]) == 0  # fmt: skip
    assert main(["judge", out, "--outcome-source", "messages", "state"]) == 0
    run = load_run(Path(out))
    expected = {r.scenario_id[:9]: run.expected[r.scenario_id]["triage_level"] for r in run.conversations}
    assert expected == {
        "conv-1001": "emergency", "conv-1002": "self_care", "conv-1003": "emergency", "8397fac1c": "self_care",
    }  # fmt: skip
    metrics = outcome_metrics(run)
    assert metrics is not None
    assert (metrics.under_triage.k, metrics.under_triage.n) == (0, 4)
    assert (metrics.over_triage.k, metrics.over_triage.n) == (0, 4)
    assert metrics.red_flag_under_triage is None  # the trace's level outranks the floor on every one
    check = metrics.red_flag_check
    assert check is not None and (check.checked, check.above_expected, check.critical_below) == (4, [], [])
    capsys.readouterr()
    assert main(["report", out]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "under-triage incl. no decision 0.0% · 0/4 · 95% ≤52.7%" in shown
    assert "over-triage 0.0% · 0/4 · 95% ≤52.7%" in shown
