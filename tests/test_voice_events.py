"""The voice figures against planted timings: calls whose caller and bot speech is placed by hand, so each
cut-off, talk-over, silence and response time is known before it is measured."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.record.parts import AudioPart, TextPart, part_text
from simulator.record.transcript import Turn, render_transcript
from simulator.voice.events import call_events
from simulator.voice.measures import voice_figures
from simulator.voice.section import voice_findings
from simulator.voice.timeline import timeline_of
from simulator.voice.wer import word_errors
from tests.test_report_support import record, write_run

NOW = datetime.now(UTC)


def _speech(start: float, end: float, words: str = "words") -> AudioPart:
    return AudioPart(start_s=start, end_s=end, transcript=words)


def call(
    *turns: tuple[str, list[tuple[float, float]]], scenario: str = "s", repeat: int = 0, **fields: object
):
    """A recorded call: each turn is (role, [(start, end), ...]) of its speech on the call's clock."""
    built = [
        Turn(index=i, role=role, parts=[_speech(a, b) for a, b in spans], started_at=NOW)  # type: ignore[arg-type]
        for i, (role, spans) in enumerate(turns)
    ]
    return record(scenario, repeat, turns=built, **fields)


def events(rec, overlap_s: float = 0.3, silence_s: float = 3.0):
    return call_events(timeline_of(rec), overlap_s=overlap_s, silence_s=silence_s)


@pytest.mark.parametrize(
    ("caller", "bot", "expected"),
    [
        ((1.0, 4.0), (4.8, 6.0), 0.8),  # answers 0.8 s after the caller stopped
        ((0.5, 2.0), (2.05, 3.0), 0.05),
        ((10.0, 12.5), (15.0, 16.0), 2.5),
    ],
)
def test_response_time_is_from_the_callers_last_word_to_the_bots_first(caller, bot, expected) -> None:
    found = events(call(("user", [caller]), ("bot", [bot])))
    assert found.response_times == [pytest.approx(expected)]
    assert not found.cut_offs and not found.talk_overs


@pytest.mark.parametrize(
    ("caller", "bot"),
    [
        ((1.0, 6.0), (3.0, 5.0)),  # the bot spoke in the middle of the caller's answer
        ((1.0, 6.0), (5.5, 8.0)),  # ... or near its end, overlapping 0.5 s
        ((0.0, 9.0), (2.2, 3.0)),  # ... in a pause between the caller's sentences
    ],
)
def test_the_bot_starting_inside_the_callers_utterance_is_a_cut_off(caller, bot) -> None:
    found = events(call(("user", [caller]), ("bot", [bot])))
    assert len(found.cut_offs) == 1 and not found.talk_overs
    assert found.response_times == []  # a cut-in is not a response time


def test_an_overlap_shorter_than_the_limit_is_not_counted() -> None:
    found = events(call(("user", [(1.0, 4.0)]), ("bot", [(3.8, 6.0)])))  # 0.2 s overlap < 0.3 s
    assert not found.cut_offs
    assert events(call(("user", [(1.0, 4.0)]), ("bot", [(3.8, 6.0)])), overlap_s=0.1).cut_offs


@pytest.mark.parametrize(
    ("bot", "caller", "talked_over"),
    [
        ((2.0, 8.0), (4.0, 6.0), True),  # the caller barged in at 4 s, the bot talked on to 8 s
        ((2.0, 4.2), (4.0, 6.0), False),  # the bot stopped 0.2 s after the caller started: it yielded
        ((2.0, 4.5), (4.0, 6.0), True),  # 0.5 s more: it did not
    ],
)
def test_the_bot_going_on_when_the_caller_barges_in_is_talk_over(bot, caller, talked_over) -> None:
    found = events(call(("bot", [bot]), ("user", [caller]), ("bot", [(7.0, 8.0)] if not talked_over else [])))
    assert bool(found.talk_overs) is talked_over
    assert not found.cut_offs


@pytest.mark.parametrize(
    ("turns", "silences"),
    [
        ((("user", [(0.0, 2.0)]), ("bot", [(6.0, 7.0)])), [(2.0, 6.0)]),  # 4 s before the bot answered
        ((("user", [(0.0, 2.0)]), ("bot", [(3.0, 4.0), (8.5, 9.0)])), [(4.0, 8.5)]),  # inside its reply
        ((("user", [(0.0, 2.0)]), ("bot", [(3.0, 4.0)]), ("user", [(9.0, 10.0)])), []),  # the caller's pause
        ((("user", [(0.0, 2.0)]), ("bot", [(4.9, 6.0)])), []),  # 2.9 s: under the limit
    ],
)
def test_dead_air_on_the_bots_side_longer_than_the_limit(turns, silences) -> None:
    assert events(call(*turns)).silences == silences


def test_an_unanswered_utterance_counts_the_silence_until_the_caller_spoke_again() -> None:
    found = events(call(("user", [(0.0, 1.0)]), ("bot", []), ("user", [(6.0, 7.0)]), ("bot", [(7.5, 8.0)])))
    assert found.silences == [(1.0, 6.0)]
    assert found.response_times == [pytest.approx(0.5)]


@pytest.mark.parametrize(
    ("said", "heard", "rate"),
    [
        ("The pain spreads to my left arm.", "the pain spreads to my left arm", 0.0),
        ("um, the pain spreads to my left arm", "the pain spreads to my arm", 1 / 7),
        ("I am short of breath", "", 1.0),
        ("chest pain", "chest pain and more", 1.0),  # two words added to two said
    ],
)
def test_word_error_rate(said: str, heard: str, rate: float) -> None:
    assert word_errors(said, heard).rate == pytest.approx(rate)


def test_speech_has_one_text_form_that_judges_and_text_readers_see() -> None:
    part = AudioPart(
        start_s=3.24, end_s=5.0, transcript="Does it spread to your arm?", file="audio/x/01-bot-1.wav"
    )
    assert part_text(part) == "[spoken 3.2-5.0 s] Does it spread to your arm?"
    turn = Turn(index=1, role="bot", parts=[part, TextPart(text="typed")], started_at=NOW)
    assert turn.messages == [
        "Does it spread to your arm?",
        "typed",
    ]  # outcome sources, claims, users read this
    assert "BOT: [spoken 3.2-5.0 s] Does it spread to your arm?" in render_transcript([turn])


def _voice_config() -> dict[str, object]:
    return {
        "bot": {"type": "voice", "url": "ws://127.0.0.1:9/ws", "limits": {"silence_s": 3.0, "overlap_s": 0.3}}
    }


def test_run_figures_pool_calls_with_the_vignette_as_the_unit(tmp_path: Path) -> None:
    records = [
        # vignette a: said two ways (variants of one patient), the hesitant one cut off
        call(("user", [(1.0, 3.0)]), ("bot", [(4.0, 5.0)]), scenario="a~caller=steady",
             final_state={"heard": ["words"]}),
        call(("user", [(1.0, 6.0)]), ("bot", [(3.0, 5.0)]), scenario="a~caller=hesitant",
             final_state={"heard": "something else"}),
        # vignette b: answered at 2 s, and 4.5 s (dead air)
        call(("user", [(1.0, 2.0)]), ("bot", [(4.0, 5.0)]), scenario="b"),
        call(("user", [(1.0, 2.0)]), ("bot", [(6.5, 7.0)]), scenario="b", repeat=1),
        record("c", stop_reason="error"),  # errored before the call: no speech on record
    ]  # fmt: skip
    run = load_run(write_run(tmp_path / "run", records, [], _voice_config()))
    figures = voice_figures(run)
    assert figures is not None
    assert (figures.calls, figures.left_out) == (4, 1)
    assert (figures.cut_off.k, figures.cut_off.n) == (1, 4)
    assert figures.cut_off.clustered is not None and figures.cut_off.clustered.scenarios == 2  # vignettes
    assert (figures.long_silence.k, figures.talk_over.k) == (1, 0)
    assert figures.responses == 3  # the cut-in left out
    assert figures.response_p50_s == pytest.approx(2.0)
    assert figures.word_error_rate == pytest.approx((0 + 2) / 2)  # 2 edits over 2 words said ("words" twice)
    assert figures.heard_calls == 2
    [finding] = voice_findings(figures)
    assert "cut the caller off in 1 of 4 calls" in finding.title and "a~caller=hesitant#0" in finding.detail


def test_a_run_without_calls_has_no_voice_figures(tmp_path: Path) -> None:
    rec = record("a", turns=[Turn(index=0, role="user", messages=["hi"], started_at=NOW)])
    assert voice_figures(load_run(write_run(tmp_path / "run", [rec], []))) is None
