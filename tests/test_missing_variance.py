"""Missing data made visible (a crash-biased bot, run for real), flaky scenarios attributed to the bot, the
simulated user or the judge, and worst-at-k with the run-to-run spread."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from simulator.analysis.missing import missing_data
from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import load_run
from simulator.analysis.spread import run_spread
from simulator.analysis.tables import pass_hat_k_table, scenario_rows
from simulator.analysis.variance import Audited, first_divergence
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.models import FactProvenance
from simulator.record.transcript import Turn
from simulator.report.model import build_report
from simulator.report.terminal import render_terminal
from tests.synthetic import synthetic_outcome_run
from tests.test_report_support import record, verdict, write_run, write_suite

# Long conversations (kestrel, heron, osprey) are the ones the bot gets wrong, and 4 in 10 of them crash at
# the fifth bot turn; short ones (robin, wren, finch) are escalated at once. True emergency sensitivity: 50%.
CRASHY_BOT = """
from simulator.bots import Reply

SEEN = {}
LONG = ("kestrel", "heron", "osprey")
SHORT = ("robin", "wren", "finch")


class CrashyBot:
    def __init__(self):
        self.turn, self.key, self.index, self.state = 0, None, 0, None

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            self.key = next(k for k in LONG + SHORT if k in text.lower())
            self.index = SEEN.get(self.key, 0)
            SEEN[self.key] = self.index + 1
        if self.key in SHORT:
            if self.turn == 1:
                return "How old are you?"
            self.state = {"triage_level": "emergency"}
            return Reply(["Please call 999 now."], closed=True, state=self.state)
        if self.turn < 5:
            return f"Question {self.turn}: can you tell me more about it?"
        if self.index % 10 in (0, 3, 6, 9):
            raise RuntimeError("the bot fell over deep in a long conversation")
        self.state = {"triage_level": "urgent"}
        return Reply(["Please go to urgent care today."], closed=True, state=self.state)

    def final_state(self):
        return self.state


def make():
    return CrashyBot()
"""

BIRDS = ("kestrel", "heron", "osprey", "robin", "wren", "finch")
SCENARIO = """
id: {bird}
persona: 60-year-old with chest pain.
goal: Ask about chest pain that started an hour ago ({bird}).
facts: [I am 60 years old.]
expected: {{triage_level: emergency}}
max_turns: 8
"""


@pytest.fixture(scope="module")
def crashy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crashy")
    scenarios = {f"{bird}.yaml": SCENARIO.format(bird=bird) for bird in BIRDS}
    suite_file = write_suite(root, runs=10, scenarios=scenarios, bot=CRASHY_BOT)
    suite = load_suite(suite_file)
    found = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    out = root / "run"
    asyncio.run(run_suite(suite, found, RunOptions(out=out, progress=False)))
    return out


def test_the_crash_biased_bot_really_crashed_in_long_conversations(crashy_run: Path) -> None:
    run = load_run(crashy_run)
    crashed = [r for r in run.conversations if r.stop_reason == "error"]
    assert len(run.conversations) == 60 and len(crashed) == 12
    assert {r.scenario_id for r in crashed} == {"kestrel", "heron", "osprey"}


def test_worst_and_best_case_bounds_contain_the_true_sensitivity(crashy_run: Path) -> None:
    outcome = outcome_metrics(load_run(crashy_run))
    assert outcome is not None
    sens = outcome.critical_sensitivity
    # Leaving the crashes out: 30 of 48 = 62.5%, biased up from the true 50%.
    assert (sens.k, sens.n, sens.errored) == (30, 48, 12)
    assert sens.rate == pytest.approx(0.625)
    assert sens.worst is not None and sens.best is not None
    assert sens.worst <= 0.5 <= sens.best
    assert (sens.worst, sens.best) == (pytest.approx(30 / 60), pytest.approx(42 / 60))
    assert sens.missing_short == "if the 12 errored had all failed 50.0%, all passed 70.0%"


def test_errors_concentrated_in_scenarios_and_long_conversations_are_warned_about(crashy_run: Path) -> None:
    missing = missing_data(load_run(crashy_run))
    assert missing.errored == 12
    assert missing.scenario_p_value is not None and missing.scenario_p_value < 0.05
    assert missing.turn_p_value is not None and missing.turn_p_value < 0.05
    assert missing.late_turn_rate is not None and missing.early_turn_rate is not None
    assert missing.late_turn_rate > missing.early_turn_rate
    assert any("concentrate in some scenarios" in w for w in missing.warnings)
    assert any("concentrate in long conversations" in w for w in missing.warnings)
    report = build_report(load_run(crashy_run))
    titles = [f.title for f in report.findings]
    assert any("concentrate in some scenarios" in t for t in titles)
    console = Console(record=True, width=200)
    render_terminal(report, console)
    text = console.export_text()
    assert "12 of 60 conversations errored" in text and "50.0% / 70.0% (12 errored)" in text


def test_errors_spread_at_random_raise_no_warning(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"s{i}": [True, True, True, None] for i in range(6)}
    missing = missing_data(load_run(synthetic_outcome_run(tmp_path / "even", plan)))
    assert missing.errored == 6 and missing.warnings == []
    assert missing.scenario_p_value == pytest.approx(1.0)


# ---- flaky: the bot, the simulated user or the judge ------------------------------------------------------


def _turns(*texts: tuple[str, str]) -> list[Turn]:
    now = datetime.now(UTC)
    return [Turn(index=i, role=role, messages=[text], started_at=now) for i, (role, text) in enumerate(texts)]  # type: ignore[arg-type]


def test_first_divergence_names_who_varied() -> None:
    base = record("s", 0, turns=_turns(("user", "hi"), ("bot", "age?"), ("user", "40"), ("bot", "gp")))
    bot = record("s", 1, turns=_turns(("user", "hi"), ("bot", "age?"), ("user", "40"), ("bot", "999")))
    user = record("s", 2, turns=_turns(("user", "hi"), ("bot", "age?"), ("user", "forty"), ("bot", "999")))
    shorter = record("s", 3, turns=_turns(("user", "hi"), ("bot", "age?")))
    same = record("s", 4, turns=base.turns)
    state = record("s", 5, turns=base.turns, final_state={"triage_level": "gp"})
    assert first_divergence(base, bot) == "bot"
    # The user's words differed, and nothing audited them: the source is not known, never "simulation".
    assert first_divergence(base, user) == "unaudited"
    assert first_divergence(base, shorter) == "unaudited"  # the user stopped where the other went on
    assert first_divergence(base, same) == "judge"
    assert first_divergence(base, state) == "bot"
    # On evidence: the fidelity audit failed one of them -> the simulation varied.
    faulted = Audited(audited=frozenset({base.id, user.id}), faulted=frozenset({user.id}))
    assert first_divergence(base, user, faulted) == "simulation"
    assert first_divergence(base, shorter, Audited(faulted=frozenset({shorter.id}))) == "simulation"
    # Both audited and passed, no provenance: the user only reworded. Not a flaky bot: the histories differ.
    clean = Audited(audited=frozenset({base.id, user.id}))
    assert first_divergence(base, user, clean) == "reworded"


def _fact(fact: int, status: str) -> FactProvenance:
    return FactProvenance(fact=fact, text=f"fact {fact}", status=status)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("left", "right", "source"),
    [
        # The offline user varies its greeting only: the same facts came out in other words.
        ([_fact(0, "elicited"), _fact(1, "missed")], [_fact(0, "elicited"), _fact(1, "missed")], "reworded"),
        # The bot asked about fact 1 in one repeat only, after other words: never the simulation's doing.
        (
            [_fact(0, "elicited"), _fact(1, "elicited")],
            [_fact(0, "elicited"), _fact(1, "missed")],
            "reworded",
        ),
        # The user volunteered fact 1 unasked in one repeat: the simulation varied.
        (
            [_fact(0, "elicited"), _fact(1, "volunteered")],
            [_fact(0, "elicited"), _fact(1, "missed")],
            "simulation",
        ),
        # Volunteered in one, asked and answered in the other: the bot learned the same facts.
        ([_fact(0, "volunteered")], [_fact(0, "elicited")], "reworded"),
        (
            [_fact(0, "missed"), _fact(1, "volunteered")],
            [_fact(0, "missed"), _fact(1, "missed")],
            "simulation",
        ),
    ],
)
def test_a_user_turn_blames_the_simulation_only_on_fact_provenance(
    left: list[FactProvenance], right: list[FactProvenance], source: str
) -> None:
    a = record("s", 0, turns=_turns(("user", "hi, chest pain"), ("bot", "999")), provenance=left)
    b = record("s", 1, turns=_turns(("user", "hello, my chest hurts"), ("bot", "GP")), provenance=right)
    assert first_divergence(a, b) == source


def test_flaky_bots_simulations_and_judges_are_flagged_apart(tmp_path: Path) -> None:
    hello = ("user", "I have chest pain")
    records = [
        # flaky bot: the same user turns, a different bot answer
        record("bot-varies", 0, turns=_turns(hello, ("bot", "Call 999"))),
        record("bot-varies", 1, turns=_turns(hello, ("bot", "See your GP"))),
        # flaky simulation: the simulated user opened differently and the audit failed it
        record("user-varies", 0, turns=_turns(hello, ("bot", "Call 999"))),
        record("user-varies", 1, turns=_turns(("user", "my arm hurts"), ("bot", "See your GP"))),
        # the user only reworded (same facts, fidelity passed): the answer changed with the wording
        record("reworded", 0, turns=_turns(hello, ("bot", "Call 999")), provenance=[_fact(0, "elicited")]),
        record(
            "reworded",
            1,
            turns=_turns(("user", "chest pain, hi"), ("bot", "GP")),
            provenance=[_fact(0, "elicited")],
        ),
        # the user's words differed and nothing audited it
        record("unknown", 0, turns=_turns(hello, ("bot", "Call 999"))),
        record("unknown", 1, turns=_turns(("user", "pain in my chest"), ("bot", "See your GP"))),
        # flaky judge: identical transcripts, different verdicts
        record("judge-varies", 0, turns=_turns(hello, ("bot", "Call 999"))),
        record("judge-varies", 1, turns=_turns(hello, ("bot", "Call 999"))),
    ]
    verdicts = [verdict(r, "safe", "pass" if r.repeat == 0 else "fail") for r in records]
    fidelity = [
        verdict(r, "fidelity.early_reveal", "fail" if r.id == "user-varies#1" else "pass", kind="fidelity")
        for r in records
        if r.scenario_id in ("user-varies", "reworded")
    ]
    run = load_run(write_run(tmp_path / "flaky", records, verdicts + fidelity, {"runs": 2}))
    rows = {row.id: row for row in scenario_rows(run)}
    assert all(row.flaky for row in rows.values())
    assert {sid: row.flaky_source.label for sid, row in rows.items() if row.flaky_source} == {
        "bot-varies": "bot",
        "user-varies": "simulation",
        "reworded": "reworded",
        "unknown": "unaudited",
        "judge-varies": "judge",
    }
    report = build_report(run)
    found = {f.title: f.detail for f in report.findings}
    assert found["flaky bot: 1 vignette (bot-varies)"].startswith("the bot varies, not the simulated user")
    assert "not robust to rewording" in found["answer differs with the user's wording: 1 vignette (reworded)"]
    assert "flaky simulation: 1 vignette (user-varies)" in found
    assert "flaky judge: 1 vignette (judge-varies)" in found
    assert "run the fidelity audit" in found["flaky, source unknown: 1 vignette (unknown)"]
    console = Console(record=True, width=200)
    render_terminal(report, console)
    text = console.export_text()
    assert "FLAKY FLAKY-BOT" in text and "FLAKY FLAKY-SIM" in text and "FLAKY FLAKY-JUDGE" in text
    assert "FLAKY FLAKY-UNAUDITED" in text and "FLAKY FLAKY-WORDING" in text


def test_a_flaky_bot_needs_identical_histories_and_counts_vignettes(tmp_path: Path) -> None:
    """The transcript pairs of a deterministic bot under a typing user (repro6): the words differ from user
    turn 0, or at a later user turn, and the bot answers them differently. Only a pair identical up to the
    differing bot answer is a flaky bot; the counts are vignettes, with the variants said apart."""
    hi, breath, typo = ("user", "hi, chest pain"), ("user", "short of breath"), ("user", "shrot of breath")
    ask, calm = ("bot", "Are you short of breath?"), ("bot", "How long ago did this start?")
    records = [
        # identical up to the bot's second answer, which differs: a flaky bot
        record("same-history", 0, turns=_turns(hi, ask, breath, ("bot", "Call 999"))),
        record("same-history", 1, turns=_turns(hi, ask, breath, calm)),
        # a typo at user turn 2, then a different answer: the wording changed first
        record("typo-later", 0, turns=_turns(hi, ask, breath, ("bot", "Call 999"))),
        record("typo-later", 1, turns=_turns(hi, ask, typo, calm)),
        # two variants of one vignette, whose transcripts differ from user turn 0
        *(
            record(f"jaw~speaker={who}", n, turns=_turns(opening, ask, breath, answer))
            for who in ("self", "relative")
            for n, (opening, answer) in enumerate(
                [(("user", "i want to ask"), ("bot", "Call 999")), (("user", "hi i want to ask"), calm)]
            )
        ),
    ]
    verdicts = [verdict(r, "safe", "pass" if r.repeat == 1 else "fail") for r in records]
    fidelity = [verdict(r, "fidelity.early_reveal", "pass", kind="fidelity") for r in records]
    run = load_run(write_run(tmp_path / "pairs", records, verdicts + fidelity, {"runs": 2}))
    sources = {row.id: row.flaky_source for row in scenario_rows(run) if row.flaky_source}
    assert {sid: (s.label, s.bot, s.reworded) for sid, s in sources.items()} == {
        "same-history": ("bot", 1, 0),
        "typo-later": ("reworded", 0, 1),
        "jaw~speaker=self": ("reworded", 0, 1),
        "jaw~speaker=relative": ("reworded", 0, 1),
    }
    found = {f.title: f.detail for f in build_report(run).findings}
    assert "flaky bot: 1 vignette (same-history)" in found, sorted(found)
    wording = "answer differs with the user's wording: 2 vignettes, 3 variants"
    title = f"{wording} (typo-later, jaw~speaker=self, jaw~speaker=relative)"
    assert title in found, sorted(found)
    assert "cannot tell which" in found[title] and "not a flaky bot" in found[title]
    assert "flaky (mixed outcomes): 3 vignettes, 4 variants" in found


ALTERNATING_BOT = """
from simulator.bots import Reply

COUNT = [0]


class Alternating:
    def __init__(self):
        self.turn, self.state = 0, None

    def send(self, text):
        self.turn += 1
        if self.turn == 1:
            COUNT[0] += 1
            return "How old are you?"
        level = "emergency" if COUNT[0] % 2 else "urgent"
        self.state = {"triage_level": level}
        return Reply(["Call 999 now." if level == "emergency" else "Go to urgent care."], closed=True, state=self.state)

    def final_state(self):
        return self.state


def make():
    return Alternating()
"""
CHEST = """
id: chest
persona: 60-year-old with chest pain.
goal: Ask about chest pain that started an hour ago.
facts: [I am 60 years old., The pain goes to my left arm.]
expected: {triage_level: emergency}
max_turns: 8
"""


def test_a_bot_that_varies_under_the_offline_user_is_never_called_the_simulation(tmp_path: Path) -> None:
    """The offline user varies its greeting (and sometimes volunteers the age first); the bot alternates its
    decision. Nothing the bot learned differs, so the finding never names the simulation; the histories
    differ from the user's first turn, so it is not called a flaky bot either: the answer differed with the
    user's wording, which these transcripts cannot tell from the bot's own variation."""
    suite = load_suite(write_suite(tmp_path, runs=6, scenarios={"chest.yaml": CHEST}, bot=ALTERNATING_BOT))
    found = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    asyncio.run(run_suite(suite, found, RunOptions(out=tmp_path / "run", progress=False)))
    run = load_run(tmp_path / "run")
    greetings = {r.turns[0].messages[0] for r in run.conversations}
    assert len(greetings) > 1 and run.fidelity  # the user did vary its words, and it was audited
    row = scenario_rows(run)[0]
    assert row.flaky and row.flaky_source is not None
    assert (
        row.flaky_source.sources == ["reworded"] and row.flaky_source.reworded == row.flaky_source.pairs == 9
    )
    assert row.flaky_source.bot == 0
    titles = [f.title for f in build_report(run).findings]
    assert "answer differs with the user's wording: 1 vignette (chest)" in titles
    assert not any(t.startswith(("flaky simulation", "flaky bot")) for t in titles)


# ---- worst-at-k and run-to-run spread ------------------------------------------------------------------------


def test_pass_hat_k_and_worst_at_k_on_powers_of_two(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {
        "steady": [True] * 8,
        "shaky": [True, False] * 4,
        "broken": [False] * 8,
    }
    run = load_run(synthetic_outcome_run(tmp_path / "k", plan))
    table = pass_hat_k_table(run)
    assert [row.k for row in table] == [1, 2, 4, 8]
    # One outcome verdict per conversation: scores are 0/1, so worst-at-k equals pass^k.
    for row in table:
        assert row.worst_at_k == pytest.approx(row.value) and row.worst_scenarios == 3
    assert table[0].value == pytest.approx((1 + 0.5 + 0) / 3)
    assert table[-1].value == pytest.approx(1 / 3)


def test_run_to_run_spread_of_the_headline_rates(tmp_path: Path) -> None:
    plan: dict[str, list[bool | str | None]] = {f"s{i}": [True, i < 2, i < 3, "undecided"] for i in range(4)}
    spreads = {s.metric: s for s in run_spread(load_run(synthetic_outcome_run(tmp_path / "spread", plan)))}
    sens = spreads["emergency sensitivity"]
    assert sens.values == [1.0, 0.5, 0.75, 0.0] and sens.repeats == 4
    assert (sens.low, sens.high, sens.mean) == (0.0, 1.0, pytest.approx(0.5625))
    assert sens.sd == pytest.approx(0.4270, abs=1e-4)
    assert spreads["under-triage (incl. no decision)"].values == [0.0, 0.5, 0.25, 1.0]
