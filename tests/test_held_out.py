"""A sealed held-out set: held-out transcripts and evidence absent from every output until unsealed (the
files and the desk's pages are grepped for a planted marker), tuned against held-out rates, the seeded hash."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from simulator.cli import main
from simulator.config.factors import held_out_ids, suite_scenarios
from simulator.config.suite import load_suite
from simulator.record.folder import RunFolder
from simulator.serve import DeskConfig, create_app
from tests._relation_bots import MARKER, STATE_MARKER

FACT_MARKER = "FACT-CANARY-77"

SCENARIOS = """
- id: chest-a
  persona: 52-year-old man, short messages.
  goal: Find out whether he should see someone about chest pressure.
  facts: [Pressure in the chest for two hours., The pain goes to the left arm.]
  expected: {triage_level: emergency}
  max_turns: 6
- id: chest-b
  persona: 60-year-old woman, polite.
  goal: Ask about a heavy feeling in her chest.
  facts: [A heavy feeling in the chest since lunch., It spreads to the jaw.]
  expected: {triage_level: emergency}
  max_turns: 6
- id: hidden-tired
  persona: A student, tired all the time.
  goal: Ask whether feeling tired for three weeks with night sweats needs a doctor.
  facts: [Tired for three weeks., Night sweats soaking the sheets (FACT-CANARY-77).]
  expected: {triage_level: gp}
  split: held_out
  max_turns: 6
- id: hidden-worried
  persona: A worried parent.
  goal: Ask whether a child who is worried and not eating for a week needs a doctor.
  facts: [Not eating for a week.]
  expected: {triage_level: gp}
  split: held_out
  max_turns: 6
"""


def _many(count: int) -> str:
    """`count` chest scenarios the bot gets right, and `count` held-out ones it gets wrong."""
    chest = [
        f"- {{id: chest-{i}, persona: 'A man of {50 + i}.', goal: Ask about chest pressure.,"
        " facts: [Pressure in the chest., The pain goes to the left arm.], expected: {triage_level: emergency}}"
        for i in range(count)
    ]
    hidden = [
        f"- {{id: hidden-tired-{i}, persona: 'A student of {20 + i}.', goal: Ask whether being tired needs a"
        " doctor., facts: [Tired for three weeks.], expected: {triage_level: gp}, split: held_out}"
        for i in range(count)
    ]
    return "\n".join(chest + hidden) + "\n"


def _run(tmp_path: Path, scenarios: str = SCENARIOS) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir(parents=True)
    (folder / "scenarios.yaml").write_text(textwrap.dedent(scenarios))
    (folder / "suite.yaml").write_text(
        textwrap.dedent(
            """
            name: sealed
            scenarios: {paths: [scenarios.yaml]}
            bot: {type: python, factory: "tests._relation_bots:worse_where_hidden"}
            user: {model: offline}
            runs: 3
            outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}
            """
        )
    )
    out = tmp_path / "run"
    assert main(["run", str(folder / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    return out


def _outputs(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Everything a person can read of the run: terminal, files, the desk's pages."""
    capsys.readouterr()
    got: dict[str, str] = {}
    for name, argv in {
        "show": ["show", str(run)],
        "show-raw": ["show", str(run), "--raw"],
        "report": ["report", str(run), "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"),
                   "--json-transcripts", "--junit", str(tmp_path / "r.xml")],
        "compare": ["compare", str(run), str(run)],
        "export": ["export-otel", str(run), "--out", str(tmp_path / "otel.json")],
    }.items():  # fmt: skip
        main(argv)
        got[name] = capsys.readouterr().out
    for name in ("r.html", "r.json", "r.xml", "otel.json"):
        got[name] = (tmp_path / name).read_text()
    client = TestClient(
        create_app(DeskConfig(run.parent, tmp_path / "suite", tmp_path)), base_url="http://127.0.0.1"
    )
    got["desk-run"] = client.get(f"/runs/{run.name}").text
    for record in RunFolder(run).conversations():
        got[f"desk {record.id}"] = client.get(f"/runs/{run.name}/c/{record.id.replace('#', '%23')}").text
    return got


def test_held_out_transcripts_are_absent_from_every_output_until_unsealed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path)
    record = (run / "conversations.jsonl").read_text()
    for marker in (MARKER, STATE_MARKER, FACT_MARKER):  # the record keeps everything
        assert marker in record, marker
    sealed = _outputs(run, tmp_path / "sealed", capsys) if (tmp_path / "sealed").mkdir() is None else {}
    # Canaries in every channel: the transcript, the final state beside the decision, the facts' wording.
    leaks = [
        (name, m) for name, text in sealed.items() for m in (MARKER, STATE_MARKER, FACT_MARKER) if m in text
    ]
    assert leaks == []
    # The decision itself stays: every rate still counts the held-out conversations.
    assert '"triage_level": "self_care"' in sealed["r.json"] or "self_care" in sealed["r.json"]
    assert "[sealed: a held-out conversation" in sealed["show"]
    assert "[sealed" in sealed["desk hidden-tired#0"] and "chest-a" in sealed["r.html"]
    assert main(["unseal", str(run), "--by", "Dr Lee", "--reason", "release review"]) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["unsealed"][0]["by"] == "Dr Lee" and manifest["unsealed"][0]["reason"] == "release review"
    (tmp_path / "open").mkdir()
    opened = _outputs(run, tmp_path / "open", capsys)
    for name in ("show", "show-raw", "r.html", "r.json", "desk hidden-tired#0"):
        assert MARKER in opened[name], name
    assert STATE_MARKER in opened["r.json"] and STATE_MARKER in opened["show"]


def test_the_report_sets_tuned_against_held_out_and_flags_the_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    few = _run(tmp_path / "few")
    assert main(["report", str(few), "--json", str(tmp_path / "few.json"), "--quiet"]) == 0
    split = json.loads((tmp_path / "few.json").read_text())["split"]
    assert (split["tuned_scenarios"], split["held_out_scenarios"], split["sealed"]) == (2, 2, True)
    rows = {r["metric"]: r for r in split["rows"]}
    passed = rows["pass rate (conversations)"]
    assert (passed["tuned"]["k"], passed["held_out"]["k"]) == (6, 0)
    # 6/6 against 0/6, but on two scenarios each: the clustered intervals overlap, so no gap is claimed.
    assert passed["gap"] is False
    many = _run(tmp_path / "many", _many(8))
    assert main(["report", str(many), "--json", str(tmp_path / "many.json"), "--quiet"]) == 0
    rows = {r["metric"]: r for r in json.loads((tmp_path / "many.json").read_text())["split"]["rows"]}
    assert rows["pass rate (conversations)"]["gap"] is True  # eight scenarios a side: the gap is real
    capsys.readouterr()
    main(["report", str(many)])
    out = capsys.readouterr().out
    assert re.search(r"pass rate .*│ GAP", out), out


def test_a_seeded_fraction_holds_out_the_same_scenarios_every_time(tmp_path: Path) -> None:
    ids = [f"scenario-{i:03d}" for i in range(400)]
    chosen = held_out_ids(ids, 0.25, seed=7)
    assert chosen == held_out_ids(list(reversed(ids)), 0.25, seed=7)  # the order read does not matter
    assert len(chosen) == 100  # exactly a quarter
    assert chosen != held_out_ids(ids, 0.25, seed=8)
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "scenarios.yaml").write_text(
        "\n".join(
            f"- {{id: {i}, persona: p, goal: g, tags: [{'odd' if n % 2 else 'even'}], "
            f"split: {'tuned' if i == ids[0] else 'null'}}}"
            for n, i in enumerate(ids[:40])
        )
    )
    (folder / "suite.yaml").write_text(
        "name: s\nscenarios: {paths: [scenarios.yaml]}\nbot: {type: python, factory: 'x:y'}\n"
        "held_out: {fraction: 0.25, seed: 7}\n"
    )
    scenarios = suite_scenarios(load_suite(folder / "suite.yaml"))
    marked = {s.id for s in scenarios if "held-out" in s.tags}
    assert marked == held_out_ids(ids[1:40], 0.25, seed=7)  # `split: tuned` wins, and is not counted
    assert len(marked) == 10  # round(0.25 x 39 = 9.75)
    # A run of some tags holds out the same vignettes as a run of all of them.
    odd = suite_scenarios(load_suite(folder / "suite.yaml"), tags=["odd"])
    assert {s.id for s in odd if "held-out" in s.tags} == marked & {s.id for s in odd}


@pytest.mark.parametrize(
    ("n", "fraction", "share"), [(22, 0.3, 7), (22, 0.2, 4), (10, 0.25, 3), (3, 0.5, 2), (5, 0.05, 0)]
)
def test_the_share_held_out_is_exact(n: int, fraction: float, share: int) -> None:
    """round(fraction x n), halves up: 0.3 of 22 vignettes is 7 (a draw per vignette held out 11)."""
    ids = [f"vignette-{i:02d}" for i in range(n)]
    for seed in range(20):
        assert len(held_out_ids(ids, fraction, seed)) == share


def test_adding_or_removing_a_vignette_moves_at_most_one_other_across() -> None:
    ids = [f"v{i}" for i in range(30)]
    for seed in range(10):
        before = held_out_ids(ids, 0.3, seed)
        for extra in (f"new-{k}" for k in range(15)):
            after = held_out_ids([*ids, extra], 0.3, seed) - {extra}
            assert len(before ^ after) <= 1, (seed, extra)
        for gone in ids:
            after = held_out_ids([i for i in ids if i != gone], 0.3, seed)
            assert len((before - {gone}) ^ after) <= 1, (seed, gone)


def test_a_sealed_record_keeps_the_decision_and_nothing_else_the_bot_reported() -> None:
    from simulator.record.seal import SEALED, seal_record, seal_verdict
    from tests.test_report_support import record, verdict

    rec = record(
        "hidden",
        final_state={"triage_level": "gp", "booked_for": STATE_MARKER},
        environment_state={"appointments": [{"name": STATE_MARKER}]},
    )
    sealed = seal_record(rec, frozenset({"triage_level"}))
    assert sealed.final_state == {"triage_level": "gp"} and sealed.environment_state is None
    tool = seal_verdict(
        verdict(rec, "environment.appointments[0].name", "fail", expected="x", actual=STATE_MARKER)
    )
    outcome = seal_verdict(verdict(rec, "outcome.triage_level", "fail", expected="urgent", actual="gp"))
    assert (tool.actual, tool.reasoning) == (None, SEALED) and (outcome.expected, outcome.actual) == (
        "urgent",
        "gp",
    )
