"""Outcome sources (docs/outcome-sources.md): the outcome read from the bot's state, from what it told the
patient, from a tool call or from an LLM classifier, checked against bots whose truth is planted
(tests/_outcome_bots.py); agreement between sources against planted disagreements; a re-judge with another
source giving the figures of a fresh run; config mistakes as one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.outcome import actual_outcome, outcome_metrics
from simulator.analysis.outcome_agreement import outcome_agreement
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.config.suite import load_suite
from simulator.errors import UserError
from tests import _outcome_bots as bots

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = ROOT / "examples/triage_vocabulary.yaml"

# code word -> the scenario's expected level
EXPECTED = {
    "alpha": "emergency",
    "bravo": "emergency",
    "charlie": "gp",
    "delta": "gp",
    "echo": "self_care",
    "foxtrot": "urgent",
    "golf": "gp",
}


def _write_suite(folder: Path, outcome: dict[str, Any], *, bot: str = "planted", runs: int = 1,
                 judge_model: str | None = None, codes: dict[str, str] = EXPECTED) -> Path:  # fmt: skip
    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True, exist_ok=True)
    for code, expected in codes.items():
        (scenarios / f"{code}.yaml").write_text(
            json.dumps(
                {
                    "id": code,
                    "persona": "an adult asking for advice",
                    "goal": f"Ask what to do about case {code}.",
                    "facts": ["I am 40 years old."],
                    "expected": {"triage_level": expected},
                    "max_turns": 3,
                }
            )
        )
    suite = folder / "suite.yaml"
    suite.write_text(
        json.dumps(
            {
                "name": "planted-outcome",
                "scenarios": {"paths": ["scenarios"]},
                "bot": {"type": "python", "factory": f"tests._outcome_bots:{bot}"},
                "user": {"model": "offline", "vocabulary": str(VOCABULARY)},
                "judges": {"paths": [], "model": judge_model},
                "runs": runs,
                "concurrency": 2,
                "seed": 0,
                "outcome": {
                    "key": "triage_level",
                    "levels": ["self_care", "gp", "urgent", "emergency"],
                    "critical": "emergency",
                    **outcome,
                },
            }
        )
    )
    return suite


def _run(suite: Path, out: Path) -> Path:
    assert main(["run", str(suite), "--out", str(out), "--no-progress"]) in (0, 1)
    return out


def _figures(path: Path) -> dict[str, Any]:
    metrics = outcome_metrics(load_run(path))
    assert metrics is not None
    return {
        "source": metrics.source,
        "matrix": [row.counts for row in metrics.matrix],
        "under": (metrics.under_triage.k, metrics.under_triage.n),
        "over": (metrics.over_triage.k, metrics.over_triage.n),
        "critical": (metrics.critical_sensitivity.k, metrics.critical_sensitivity.n),
        "no_decision": (metrics.no_decision.k, metrics.no_decision.n),
    }


def _truth(of: int) -> dict[str, str]:
    """Per code word, the planted value at position `of` (0: told the patient, 1: state, 2: tool call)."""
    return {
        code: (planted[of] or "no decision").replace("none", "no decision")
        for code, planted in bots.PLANTED.items()
    }


@pytest.mark.parametrize(("source", "of"), [("messages", 0), ("state", 1), ("tool", 2)])
def test_each_source_reads_the_planted_outcome_of_every_conversation(
    source: str, of: int, tmp_path: Path
) -> None:
    outcome: dict[str, Any] = {"source": source}
    if source == "tool":
        outcome["tool"] = {"call": "record_disposition.level"}
    run = load_run(_run(_write_suite(tmp_path, outcome), tmp_path / "run"))
    got = {record.scenario_id: actual_outcome(run, record) for record in run.conversations}
    assert got == _truth(of)


def test_under_triage_from_messages_is_the_planted_rate_and_state_would_hide_it(tmp_path: Path) -> None:
    told = _figures(_run(_write_suite(tmp_path / "m", {"source": "messages"}), tmp_path / "m/run"))
    stored = _figures(_run(_write_suite(tmp_path / "s", {"source": "state"}), tmp_path / "s/run"))
    # Told the patient: bravo under-triaged (gp for an emergency), golf advised nothing on a gp case,
    # delta over-triaged (999 for a gp case); one of the two emergencies escalated.
    assert told["under"] == (2, 7) and told["over"] == (1, 7) and told["critical"] == (1, 2)
    assert told["no_decision"] == (1, 7) and told["source"] == ["messages"]
    # Its state says every decided case was right: only golf (nothing stored) counts against it.
    assert stored["under"] == (1, 7) and stored["over"] == (0, 7) and stored["critical"] == (2, 2)


def test_the_default_source_keeps_the_figures_of_a_run_judged_before_sources_existed(tmp_path: Path) -> None:
    out = _run(_write_suite(tmp_path, {}), tmp_path / "run")
    fresh = _figures(out)
    # Strip the recorded outcome from every verdict: an older run folder reads its state, with the same figures.
    verdicts = out / "verdicts.jsonl"
    lines = [json.loads(line) for line in verdicts.read_text().splitlines()]
    assert any(line.get("outcome") for line in lines)
    verdicts.write_text(
        "".join(json.dumps({k: v for k, v in line.items() if k != "outcome"}) + "\n" for line in lines)
    )
    assert _figures(out) == fresh and fresh["source"] == ["state"]


def test_agreement_between_state_and_messages_lists_the_planted_disagreements(tmp_path: Path) -> None:
    out = _run(_write_suite(tmp_path, {"source": ["messages", "state"]}), tmp_path / "run")
    run = load_run(out)
    agreement = outcome_agreement(run)
    assert agreement is not None and agreement.sources == ["messages", "state"]
    [pair] = agreement.pairs
    # Both decided on six conversations (golf: neither); bravo and delta differ.
    assert (pair.agree.k, pair.agree.n, pair.one_decided, pair.neither_decided) == (4, 6, 0, 1)
    texts = {d.conversation_id: d.text for d in pair.disagreements}
    assert set(texts) == {"bravo#0", "delta#0"}
    assert (
        texts["delta#0"]
        == "the bot told the patient 'Call 999 now and ask for an ambulance.' (emergency); state says gp"
    )
    # The first source that decides wins: the messages' figures, golf undecided by both.
    assert _figures(out)["under"] == (2, 7)
    report = tmp_path / "report.json"
    assert main(["report", str(out), "--json", str(report), "--quiet"]) in (0, 1)
    data = json.loads(report.read_text())
    assert data["outcome"]["source"] == ["messages", "state"]
    assert data["outcome_sources"]["pairs"][0]["agree"]["k"] == 4
    assert any("outcome sources disagree" in f["title"] for f in data["findings"])


def test_tool_and_messages_agree_except_where_planted(tmp_path: Path) -> None:
    outcome = {"source": ["tool", "messages"], "tool": {"call": "record_disposition.level"}}
    agreement = outcome_agreement(load_run(_run(_write_suite(tmp_path, outcome), tmp_path / "run")))
    assert agreement is not None
    [pair] = agreement.pairs
    # tool decided five (foxtrot has no call, golf neither); it differs from the words on bravo and delta.
    assert (pair.agree.k, pair.agree.n, pair.one_decided, pair.neither_decided) == (3, 5, 1, 1)


def test_the_last_advice_or_the_most_urgent_one_counts_as_the_suite_says(tmp_path: Path) -> None:
    from simulator.config.suite import OutcomeConfig
    from simulator.eventloop import run_async
    from simulator.judging.outcome_reader import make_outcome_reader
    from simulator.record.models import ConversationRecord
    from simulator.record.transcript import Turn

    now = "2026-01-01T00:00:00Z"
    record = ConversationRecord.model_validate(
        {
            "id": "x#0", "scenario_id": "x", "repeat": 0, "stop_reason": "user_done",
            "started_at": now, "ended_at": now,
            "turns": [
                Turn.model_validate({"index": 0, "role": "user", "messages": ["chest pain"], "started_at": now}),
                Turn.model_validate({"index": 1, "role": "bot", "started_at": now,
                                     "messages": ["Call 999 now and ask for an ambulance."]}),
                Turn.model_validate({"index": 2, "role": "user", "messages": ["it's gone now"], "started_at": now}),
                Turn.model_validate({"index": 3, "role": "bot", "started_at": now,
                                     "messages": ["Then book a GP appointment. If it gets worse, call 999."]}),
            ],
        }
    )  # fmt: skip
    levels = ["self_care", "gp", "urgent", "emergency"]
    phrases = {"emergency": [r"\bcall 999\b"], "gp": [r"\bbook a gp appointment\b"]}
    for counts, level, turn in (("last", "gp", 3), ("most_urgent", "emergency", 1)):
        config = OutcomeConfig.model_validate(
            {"key": "k", "levels": levels, "source": "messages",
             "messages": {"counts": counts, "phrases": phrases, "ignore": [r"^if\b"]}}
        )  # fmt: skip
        decided = run_async(make_outcome_reader(config).decide(record))
        reading = decided.readings["messages"]
        assert (decided.value, reading.turn, decided.counts) == (level, turn, counts)
        assert reading.conflicts == ["emergency", "gp"]  # conflicting advice, in the order given
        assert decided.quote is not None and decided.quote.lower() in " ".join(
            m.lower() for t in record.turns for m in t.messages
        )


def test_the_judge_source_decides_with_a_verified_quote_and_not_without(tmp_path: Path) -> None:
    judge = "test:tests._outcome_bots:outcome_judge"
    suite = _write_suite(tmp_path / "ok", {"source": ["judge", "messages"]}, judge_model=judge)
    run = load_run(_run(suite, tmp_path / "ok/run"))
    assert {r.scenario_id: actual_outcome(run, r) for r in run.conversations} == _truth(0)
    agreement = outcome_agreement(run)  # the classifier and the phrases agree wherever both decide
    assert agreement is not None
    pair = agreement.pairs[0]
    assert (pair.agree.k, pair.agree.n, pair.neither_decided) == (6, 6, 1)
    liar = "test:tests._outcome_bots:misquoting_judge"
    suite = _write_suite(tmp_path / "liar", {"source": ["judge", "state"]}, judge_model=liar)
    run = load_run(_run(suite, tmp_path / "liar/run"))
    # Every quote is unverified: the judge decides nothing and the state decides every conversation.
    assert {r.scenario_id: actual_outcome(run, r) for r in run.conversations} == _truth(1)
    from simulator.analysis.outcome import decided_outcome

    decided = decided_outcome(run, run.conversations[0])
    assert decided is not None and decided.readings["judge"].verified is False


def test_rejudging_with_another_source_gives_the_figures_of_a_fresh_run(tmp_path: Path) -> None:
    stored = _run(_write_suite(tmp_path / "a", {"source": "state"}, runs=2), tmp_path / "a/run")
    fresh = _run(_write_suite(tmp_path / "b", {"source": "messages"}, runs=2), tmp_path / "b/run")
    before = _figures(stored)
    first_set = load_run(stored).judge_set
    assert before != _figures(fresh) and before["under"] == (2, 14)
    assert main(["judge", str(stored), "--outcome-source", "messages"]) == 0
    assert _figures(stored) == _figures(fresh) and _figures(stored)["under"] == (4, 14)
    # The state's reading is still there, under the judge set that wrote it.
    state_again = outcome_metrics(load_run(stored, first_set))
    assert state_again is not None and state_again.source == ["state"] and state_again.under_triage.k == 2


def test_a_stochastic_bot_s_under_triage_in_words_is_recovered_exactly(tmp_path: Path) -> None:
    codes = {"alpha": "emergency", "charlie": "gp", "foxtrot": "urgent"}
    suite = _write_suite(tmp_path, {"source": ["messages", "state"]}, bot="stochastic", runs=12, codes=codes)
    run = load_run(_run(suite, tmp_path / "run"))
    planted_under = 0
    for record in run.conversations:
        opening = next(t.messages[0] for t in record.turns if t.role == "user")
        told = bots.CHOICES[opening]
        planted_under += told != codes[record.scenario_id]
        assert actual_outcome(run, record) == told
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.under_triage.k == planted_under and metrics.under_triage.n == 36
    assert 0 < planted_under < 36  # the seed gives some under-triage, not all
    agreement = outcome_agreement(run)
    assert agreement is not None and agreement.pairs[0].agree.n - agreement.pairs[0].agree.k == planted_under


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        ({"source": "telepathy"}, "source"),
        (
            {"source": "messages", "messages": {"phrases": {"ambulance": ["999"]}}},
            "'ambulance' is not one of",
        ),
        (
            {"source": "messages", "messages": {"phrases": {"gp": ["(unclosed"]}}},
            "not a valid regular expression",
        ),
        ({"source": "tool"}, "source `tool` needs `tool:"),
        ({"source": ["state", "state"]}, "lists a source twice"),
        ({"tool": {"call": "book", "values": {}}}, "tool.call"),
    ],
)
def test_a_bad_outcome_source_config_is_a_one_line_error(
    outcome: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(UserError) as caught:
        load_suite(_write_suite(tmp_path, outcome))
    shown = caught.value.render()
    assert message in shown and "outcome" in shown and len(shown.splitlines()) == 2, shown


def test_the_miscoded_example_bot_s_record_and_words_disagree_on_every_urgent_case(tmp_path: Path) -> None:
    out = _run(ROOT / "examples/miscoded/suite.yaml", tmp_path / "run")
    run = load_run(out)
    agreement = outcome_agreement(run)
    assert agreement is not None
    [pair] = agreement.pairs
    urgent = [r.id for r in run.conversations if actual_outcome(run, r) == "urgent"]
    assert urgent and sorted(d.conversation_id for d in pair.disagreements) == sorted(urgent)
    assert all(d.readings == {"messages": "urgent", "state": "gp"} for d in pair.disagreements)
    assert pair.agree.n == len(run.conversations) and pair.agree.n - pair.agree.k == len(urgent)


def test_the_python_api_gives_the_decided_outcomes_and_the_agreement(tmp_path: Path) -> None:
    import simulator

    result = simulator.run(_write_suite(tmp_path, {"source": ["messages", "state"]}), out=tmp_path / "run")
    outcomes = result.decided_outcomes()
    assert outcomes["delta#0"].value == "emergency" and outcomes["delta#0"].readings["state"].value == "gp"
    assert outcomes["golf#0"].source is None and outcomes["golf#0"].value == "no decision"
    assert result.outcome is not None and result.outcome.source == ["messages", "state"]
    agreement = result.outcome_sources
    assert agreement is not None and (agreement.pairs[0].agree.k, agreement.pairs[0].agree.n) == (4, 6)
    # The deciding sentence is the outcome verdict's evidence: the HTML report (and the desk) highlight it.
    page = result.to_html()
    assert (
        '<mark class="ev-fail" data-criteria="outcome.triage_level" title="evidence for outcome.triage_level">'
        "Book a GP appointment for the next few days.</mark>" in page
    )


def test_gate_and_compare_name_the_source_their_figures_rest_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = _run(_write_suite(tmp_path / "m", {"source": ["messages", "state"]}), tmp_path / "m/run")
    record = _run(_write_suite(tmp_path / "s", {"source": "state"}), tmp_path / "s/run")
    capsys.readouterr()
    # Under-triage from the words: bravo and golf of 7; the gate may also test the agreement itself.
    assert (
        main(
            ["gate", str(words), "--require", "under_triage <= 100%", "--require", "outcome_agreement >= 90%"]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert "outcome metrics read from: messages, state" in out and "NOT MET" in out
    assert main(["compare", str(record), str(words)]) in (0, 1)
    out = " ".join(capsys.readouterr().out.split())
    assert "outcome figures read from: A state; B messages, state" in out
    assert "outcome_source" in out  # listed among the configuration differences too


def test_the_history_names_each_run_s_source_and_warns_when_it_changes(tmp_path: Path) -> None:
    from simulator.safety.history import build_history

    record = _run(_write_suite(tmp_path / "s", {"source": "state"}), tmp_path / "s/run")
    words = _run(_write_suite(tmp_path / "m", {"source": ["messages", "state"]}), tmp_path / "m/run")
    history = build_history([record, words])
    assert [p.outcome_source for p in history.points] == [["state"], ["messages", "state"]]
    [step] = history.steps
    assert "outcome read from state, then messages, state: a change may be the reading" in step.reason


def test_messages_without_phrases_or_with_a_vocabulary_level_unknown_to_the_suite_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _write_suite(tmp_path / "none", {"source": "messages"})
    data = json.loads(suite.read_text())
    data["user"].pop("vocabulary")
    suite.write_text(json.dumps(data))
    assert main(["run", str(suite), "--out", str(tmp_path / "none/run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "outcome source `messages` has no level phrases" in err and "Traceback" not in err
    vocabulary = tmp_path / "vocabulary.yaml"
    vocabulary.write_text("outcome_levels:\n  ambulance: ['999']\n")
    suite = _write_suite(tmp_path / "bad", {"source": "messages"})
    data = json.loads(suite.read_text())
    data["user"]["vocabulary"] = str(vocabulary)
    suite.write_text(json.dumps(data))
    assert main(["run", str(suite), "--out", str(tmp_path / "bad/run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "outcome_levels: 'ambulance' is not one of the outcome levels" in err and str(vocabulary) in err


@pytest.mark.parametrize(("source", "refused"), [("state", True), ("messages", False)])
def test_a_chat_bot_without_a_decision_tool_may_expect_an_outcome_read_from_its_messages(
    source: str, refused: bool, tmp_path: Path
) -> None:
    from simulator.engine.preflight import preflight_problems

    suite = _write_suite(tmp_path, {"source": source})
    data = json.loads(suite.read_text())
    data["bot"] = {
        "type": "chat",
        "model": "test:examples.triage_chat_model:respond",
        "system_prompt": "Triage.",
    }
    suite.write_text(json.dumps(data))
    problems = [str(p) for p in preflight_problems(load_suite(suite))]
    assert any("the bot never sets it" in p for p in problems) == refused, problems
    assert main(["validate", str(suite)]) == (2 if refused else 0)


def test_a_failed_outcome_judge_is_an_error_never_a_pass_or_a_fail(tmp_path: Path) -> None:
    broken = "test:tests._outcome_bots:broken_judge"
    run = load_run(
        _run(_write_suite(tmp_path / "j", {"source": "judge"}, judge_model=broken), tmp_path / "j/run")
    )
    assert {actual_outcome(run, r) for r in run.conversations} == {"error"}
    assert {v.result for v in run.verdicts if v.criterion_id == "outcome.triage_level"} == {"error"}
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.errored == 7 and metrics.under_triage.n == 0
    # With the state after it, the state decides where the judge could not; where the state is silent too
    # (golf), nothing is known: an error, not a conversation without a decision.
    suite = _write_suite(tmp_path / "js", {"source": ["judge", "state"]}, judge_model=broken)
    run = load_run(_run(suite, tmp_path / "js/run"))
    assert {r.scenario_id: actual_outcome(run, r) for r in run.conversations} == {
        **_truth(1),
        "golf": "error",
    }


def test_the_tool_source_maps_the_tool_s_words_and_keeps_what_is_not_a_level() -> None:
    from simulator.config.suite import OutcomeConfig
    from simulator.eventloop import run_async
    from simulator.judging.outcome_reader import make_outcome_reader
    from simulator.record.models import ConversationRecord

    now = "2026-01-01T00:00:00Z"

    def booked(*urgencies: object) -> ConversationRecord:
        calls = [
            {"type": "tool_call", "name": "book", "arguments": {"slot": {"urgency": u}}} for u in urgencies
        ]
        turn = {
            "index": 1,
            "role": "bot",
            "started_at": now,
            "parts": [*calls, {"type": "text", "text": "Booked."}],
        }
        return ConversationRecord.model_validate(
            {"id": "x#0", "scenario_id": "x", "repeat": 0, "stop_reason": "user_done",
             "started_at": now, "ended_at": now, "turns": [turn]}
        )  # fmt: skip

    config = OutcomeConfig.model_validate(
        {"key": "k", "levels": ["self_care", "gp", "urgent", "emergency"], "source": "tool",
         "tool": {"call": "book.slot.urgency", "values": {"routine": "gp", "same_day": "urgent"}}}
    )  # fmt: skip
    reader = make_outcome_reader(config)
    for urgencies, value, raw in (
        (("routine", "same_day"), "urgent", "same_day"),  # the last call counts, mapped
        (("emergency",), "emergency", "emergency"),  # a level passes as it is
        (("whenever",), "other", "whenever"),  # neither: kept as it is, in `other`
        ((), "no decision", None),
    ):
        decided = run_async(reader.decide(booked(*urgencies)))
        assert (decided.value, decided.readings["tool"].raw) == (value, raw)


def test_the_editor_schema_takes_one_source_or_a_list_and_refuses_an_unknown_one() -> None:
    import jsonschema

    from simulator.config.schemas import json_schema

    schema = json_schema("suite")
    outcome = {"key": "k", "levels": ["gp", "emergency"]}
    for source in ("messages", ["messages", "state"]):
        jsonschema.validate(
            {"bot": {"type": "python", "factory": "m:f"}, "outcome": {**outcome, "source": source}}, schema
        )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"bot": {"type": "python", "factory": "m:f"}, "outcome": {**outcome, "source": "telepathy"}},
            schema,
        )
