"""The shipped voice example end to end: `examples/voice/suite.yaml` starts the pipecat phone bot, a
simulated caller speaks each patient twice (steadily, and pausing between sentences), and the report finds
the planted flaw: the bot cuts off the caller who pauses and loses the red flag said after the pause."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import simulator
from simulator.analysis.outcome import decided_outcome
from simulator.analysis.rundata import load_run
from simulator.report.model import build_report
from simulator.report.terminal import render_terminal

pytestmark = [pytest.mark.voice, pytest.mark.pipecat]

SUITE = Path(__file__).resolve().parent.parent / "examples" / "voice" / "suite.yaml"


async def test_the_example_phone_bot_cuts_off_the_hesitant_caller_and_loses_the_red_flag(
    tmp_path: Path,
) -> None:
    # The cardiac vignette, said steadily and hesitantly: two calls at once.
    await simulator.arun(SUITE, out=tmp_path / "run", tags=["cardiac"], concurrency=2, progress=False)
    run = load_run(tmp_path / "run")
    calls = {c.scenario_id: c for c in run.conversations}
    # The bot hangs up after its advice; on a slow machine the caller may say goodbye first (user_done).
    assert all(c.error is None and c.stop_reason in ("bot_closed", "user_done") for c in calls.values()), [
        (c.id, c.stop_reason, c.error) for c in calls.values()
    ]
    steady = calls["voice-chest-pain-arm~caller=steady"]
    hesitant = calls["voice-chest-pain-arm~caller=hesitant"]
    assert steady.final_state is not None and steady.final_state["triage_level"] == "emergency"
    assert hesitant.final_state is not None
    # The flaw: the bot answered after the first sentence and dropped what was said while it talked.
    assert any("arm" in said for said in hesitant.final_state["dropped"]), hesitant.final_state
    assert hesitant.final_state["triage_level"] != "emergency"
    # The outcome is read from what the caller was told (the bot's voice, transcribed), and the bot's state is
    # read beside it: on these two calls its record and its words agree.
    for call in (steady, hesitant):
        decided = decided_outcome(run, call)
        # On failure, show every reading whole (a repr of the decided outcome is cut in the middle), and the
        # bot's transcribed words the messages source read.
        assert decided is not None and decided.source == "messages", (
            call.id,
            decided and {name: reading.model_dump() for name, reading in decided.readings.items()},
            [(turn.role, turn.messages) for turn in call.turns],
        )
        assert decided.value == call.final_state["triage_level"] == decided.readings["state"].value
    steady_said = decided_outcome(run, steady)
    assert steady_said is not None and "nine nine nine" in (steady_said.quote or "").lower()
    report = build_report(run)
    assert report.outcome is not None and report.outcome.source == ["messages", "state"]
    agreement = report.analysis("outcome_sources")
    assert agreement is not None and (agreement.pairs[0].agree.k, agreement.pairs[0].agree.n) == (2, 2)
    voice = report.analysis("voice")
    assert voice is not None
    row = {r.conversation: r for r in voice.rows}
    assert row[hesitant.id].cut_offs >= 1 and row[steady.id].cut_offs == 0
    assert voice.cut_off.k >= 1 and voice.word_error_rate is not None
    console = Console(record=True, width=100)
    render_terminal(report, console)
    text = console.export_text()
    assert "the bot cut the caller off in" in text and "Voice" in text
    assert any(f.title.startswith("the bot cut the caller off") for f in report.findings)
    audio = list((tmp_path / "run" / "audio").rglob("*.wav"))
    assert len(audio) >= 2 * 3  # every call's turns, both sides, and the whole call
