"""Simulated-user fidelity: exact offline provenance, planted simulator faults flagged and attributed,
regeneration, and fidelity verdicts kept out of every bot table."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.config.factors import suite_scenarios
from simulator.config.suite import Suite, load_suite
from simulator.engine.conversation import ConversationPlan
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.transcript import Turn
from simulator.report.model import build_report
from simulator.users.base import END, UserMessage
from simulator.users.offline import OfflineUser
from simulator.users.voice import Voice, first_person, voice_slip

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "scenarios" / "triage" / "suite.yaml"


def _suite(overrides: dict[str, Any] | None = None) -> Suite:
    return load_suite(TRIAGE, {"runs": 2, "concurrency": 4, **(overrides or {})})


def _run(suite: Suite, out: Path, **options: Any) -> tuple[list[ConversationRecord], list[Verdict]]:
    scenarios = suite_scenarios(suite, suite.scenarios.tags)
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, progress=False, **options)))
    folder = RunFolder.open(out)
    return list(folder.conversations()), list(folder.verdicts())


def test_offline_provenance_is_exact_for_every_triage_conversation(tmp_path: Path) -> None:
    """For every fact of every conversation: elicited facts are in the user turn right after the bot turn
    that asked (a question, quoted); volunteered ones in a turn no question preceded; missed ones nowhere."""
    suite = _suite()
    records, _ = _run(suite, tmp_path / "run")
    assert len(records) == 44
    scenarios = {s.id: s for s in suite_scenarios(suite, suite.scenarios.tags)}
    statuses = set()
    for record in records:
        assert record.provenance, record.id
        user_text = " ".join(t.text.lower() for t in record.turns if t.role == "user")
        for p in record.provenance:
            statuses.add(p.status)
            said = Voice(scenarios[record.scenario_id]).fact(p.text, english=True).lower().rstrip(".")
            assert p.source == "offline"
            if p.status == "missed":
                assert said not in user_text, (record.id, p.text)
                continue
            turn = record.turns[p.user_turn]
            assert turn.role == "user" and said in turn.text.lower(), (record.id, p.text)
            if p.status == "elicited":
                asked = record.turns[p.asked_turn]
                assert p.asked_turn == p.user_turn - 1 and asked.role == "bot"
                assert p.question and p.question.endswith("?") and p.question.split("?")[0] in asked.text
            else:
                assert p.asked_turn is None and p.question is None
    assert statuses == {"elicited", "volunteered", "missed"}
    # The on-behalf vignettes (a parent or a daughter writing) keep the writer's voice in every message.
    on_behalf = [r for r in records if Voice(scenarios[r.scenario_id]).speaker != "self"]
    assert {r.scenario_id for r in on_behalf} == {
        "child-fever-rash-05",
        "minor-bruise-child-21",
        "stroke-face-droop-03",
    }
    for record in on_behalf:
        said = [t.text for t in record.turns if t.role == "user"]
        assert voice_slip(said, scenarios[record.scenario_id]) is None, record.id
        assert not any(re.search(r"\b(i am \d|not me\b|keep me off)", s.lower()) for s in said), record.id


def _turn(index: int, role: str, text: str) -> Turn:
    return Turn(index=index, role=role, messages=[text], started_at=datetime.now(UTC))  # type: ignore[arg-type]


def test_offline_provenance_counts_only_turns_the_transcript_kept() -> None:
    scenario = suite_scenarios(_suite())[0]
    user = OfflineUser(scenario, seed=0, repeat=0)
    opening = asyncio.run(user.next_message([]))
    turns = [_turn(0, "user", opening.text)]
    bot = _turn(0, "bot", "How old are you? And is there any swelling of your lips?")
    answer = asyncio.run(user.next_message([*turns, bot]))
    assert not answer.done
    provenance = user.fact_provenance([*turns, bot])  # the answer was never sent: nothing elicited yet
    assert all(p.status != "elicited" for p in provenance)
    sent = [*turns, bot, _turn(1, "user", answer.text)]
    elicited = [p for p in user.fact_provenance(sent) if p.status == "elicited"]
    assert elicited and all(p.asked_turn == 1 and p.user_turn == 2 for p in elicited)


class DumpAndLeave:
    """A planted simulator fault: volunteers every fact at once, then ends before the bot decides."""

    def __init__(self, plan: ConversationPlan) -> None:
        self.plan = plan

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        if not turns:
            facts = " ".join(first_person(f) for f in self.plan.scenario.facts)
            return UserMessage(text=f"hi, {facts}", model="planted")
        return UserMessage(text=END, done=True, model="planted")


def _planted(faulty: set[str], good_after: int | None = None) -> Any:
    """Plant the fault in the scenarios named; with `good_after`, attempts from that number on play fair."""

    def make(plan: ConversationPlan, attempt: int) -> Any:
        if plan.scenario.id in faulty and (good_after is None or attempt < good_after):
            return DumpAndLeave(plan)
        return OfflineUser(plan.scenario, seed=0, repeat=plan.repeat)

    return make


def test_a_planted_fault_is_flagged_and_the_bot_failure_attributed_to_the_simulator(tmp_path: Path) -> None:
    suite = _suite({"runs": 1})
    faulty = {"hay-fever-22", "common-cold-19"}
    _run(suite, tmp_path / "run", make_user=_planted(faulty))
    report = build_report(load_run(tmp_path / "run"))
    section = report.simulated_user
    assert section is not None
    checks = {row.id: row for row in section.checks}
    assert checks["fidelity.early_reveal"].counts.failed == 2
    assert checks["fidelity.premature_end"].counts.failed == 2
    assert section.faulted.k == 2 and section.faulted.n == 22
    # A user that cannot say its provenance and no audit model: code still decides role confusion.
    assert checks["fidelity.role_confusion"].counts.passed == 22
    assert checks["fidelity.invented_facts"].counts.not_judged == 2
    blamed = {a.conversation_id: a for a in section.attribution}
    for cid in ("hay-fever-22#0", "common-cold-19#0"):
        assert blamed[cid].simulator_faulted, cid
        assert {"fidelity.early_reveal", "fidelity.premature_end"} <= set(blamed[cid].fidelity_failures)
        assert "outcome.triage_level" in blamed[cid].failing_criteria
    assert not any(a.simulator_faulted for c, a in blamed.items() if c.split("#")[0] not in faulty)
    failed = next(w for w in section.with_without if w.metric == "conversations failed")
    assert failed.without_faulted.n == failed.all.n - 2 and failed.without_faulted.k == failed.all.k - 2
    titles = " ".join(f.title for f in report.findings)
    assert "simulated user failed fidelity in 2/22" in titles
    assert "also had a simulator fidelity failure" in titles
    # The planted user's facts came out volunteered, never elicited.
    record = next(t for t in load_run(tmp_path / "run").conversations if t.id == "hay-fever-22#0")
    assert {p.status for p in record.provenance} == {"volunteered"}


def test_fidelity_verdicts_never_reach_a_bot_table(tmp_path: Path) -> None:
    suite = _suite({"runs": 1})
    _run(suite, tmp_path / "run", make_user=_planted({"common-cold-19"}))
    run = load_run(tmp_path / "run")
    assert run.fidelity and all(v.kind == "fidelity" for v in run.fidelity)
    assert not any(v.kind == "fidelity" for v in run.verdicts)
    report = build_report(run)
    assert not any(row.id.startswith("fidelity.") for row in report.criteria + report.omissions)
    for row in report.scenarios:
        assert not any(c.startswith("fidelity.") for c in row.failing_criteria)
    bot_verdicts = sum(row.counts.total for row in report.criteria)
    assert bot_verdicts == len(run.verdicts)
    from simulator.report.junit import render_junit

    junit = render_junit(report)
    assert "fidelity." not in junit and 'name="outcome.triage_level"' in junit
    shown = next(t for t in report.transcripts if t.id == "common-cold-19#0")
    assert "fidelity.premature_end" in shown.fidelity_failures
    assert any(v.kind == "fidelity" for v in shown.verdicts)  # shown in the transcript, not counted


@pytest.mark.parametrize(("policy", "good_after", "regenerations", "flagged"), [
    ({"on_fail": "regenerate", "max_regenerations": 2}, 1, 1, False),
    ({"on_fail": "regenerate", "max_regenerations": 2}, None, 2, True),
    ({"on_fail": "keep_and_flag"}, 1, 0, True),
])  # fmt: skip
def test_fidelity_policy_regenerates_or_keeps(
    tmp_path: Path, policy: dict[str, Any], good_after: int | None, regenerations: int, flagged: bool
) -> None:
    suite = _suite({"runs": 1, "user": {"model": "offline", "fidelity": policy}})
    suite.scenarios.tags = ["cardiac"]
    records, verdicts = _run(suite, tmp_path / "run", make_user=_planted({"chest-pain-vague-01"}, good_after))
    record = next(r for r in records if r.scenario_id == "chest-pain-vague-01")
    assert len(record.fidelity_regenerations) == regenerations
    assert all("fidelity.early_reveal" in reason for reason in record.fidelity_regenerations)
    mine = [v for v in verdicts if v.conversation_id == record.id and v.kind == "fidelity"]
    assert len(mine) == 5  # one verdict per check for the kept conversation only
    assert any(v.result == "fail" for v in mine) is flagged
    section = build_report(load_run(tmp_path / "run")).simulated_user
    assert section is not None and section.regenerations == regenerations


def test_simulator_labels_export_and_calibrate_measure_the_fidelity_checks(tmp_path: Path) -> None:
    import csv

    from simulator.analysis.calibrate import calibrate
    from simulator.analysis.fidelity_labels import export_simulator_labels, labels_from_run
    from simulator.record.models import Label

    suite = _suite({"runs": 1})
    _run(suite, tmp_path / "run", make_user=_planted({"common-cold-19"}))
    run = load_run(tmp_path / "run")
    transcripts, sheet, count = export_simulator_labels(run, tmp_path / "labels", seed=1)
    text = transcripts.read_text(encoding="utf-8")
    assert count == 22 and "Persona:" in text and "fidelity.early_reveal" in text
    assert "verdict" not in text.lower().replace("verdicts are not shown", "")  # blind: no results shown
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    assert len(rows) == 22 * 5 and {r["criterion_id"] for r in rows} == {
        "fidelity.invented_facts", "fidelity.early_reveal", "fidelity.premature_end",
        "fidelity.role_confusion", "fidelity.drift",
    }  # fmt: skip
    # A clinician labels: the planted conversation fails early reveal; everything else passes, except
    # one drift label the check disagrees with.
    truth = {cid: "pass" for cid in {r["conversation_id"] for r in rows}}
    for row in rows:
        fault = row["conversation_id"] == "common-cold-19#0" and row["criterion_id"] != "fidelity.drift"
        row["label"] = (
            "fail"
            if fault and row["criterion_id"] in ("fidelity.early_reveal", "fidelity.premature_end")
            else truth[row["conversation_id"]]
        )
    rows[-1]["label"] = "fail" if rows[-1]["criterion_id"] == "fidelity.drift" else rows[-1]["label"]
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["conversation_id", "criterion_id", "label", "notes"])
        writer.writeheader()
        writer.writerows(rows)
    result = calibrate(run, sheet)
    by_check = {c.criterion_id: c for c in result.criteria}
    assert set(by_check) == {r["criterion_id"] for r in rows}
    assert by_check["fidelity.drift"].false_pass.k == 1  # the human saw drift the check missed
    assert by_check["fidelity.early_reveal"].matrix["fail"]["fail"] == 1
    assert by_check["fidelity.early_reveal"].agreement.k == 22
    # The same labels, stored in the run folder's labels.jsonl by two labellers.
    folder = RunFolder.open(tmp_path / "run")
    folder.append_labels(
        Label(
            labeller=who,
            labelled_at=datetime.now(UTC),
            conversation_id=r["conversation_id"],
            criterion_id=r["criterion_id"],
            label=r["label"],
        )  # type: ignore[arg-type]
        for who in ("ana", "ben")
        for r in rows
    )
    from simulator.errors import UserError

    labelled = load_run(tmp_path / "run")  # labels are read with the run
    with pytest.raises(UserError, match="choose one with --labeller"):
        labels_from_run(labelled, None)
    again = calibrate(labelled, tmp_path / "run" / "labels.jsonl", labels_from_run(labelled, "ana"))
    assert [c.model_dump() for c in again.criteria] == [c.model_dump() for c in result.criteria]


@pytest.mark.parametrize("drop", [1, 3, 7])
def test_resume_writes_only_the_fidelity_verdicts_a_crash_lost(tmp_path: Path, drop: int) -> None:
    from collections import Counter

    from simulator.judging.fidelity import FIDELITY_CHECKS
    from simulator.record.folder import VERDICTS

    suite = _suite({"runs": 1})
    suite.scenarios.tags = ["cardiac"]
    out = tmp_path / "run"
    _run(suite, out)
    lines = (out / VERDICTS).read_text(encoding="utf-8").splitlines(keepends=True)
    fidelity = [i for i, line in enumerate(lines) if '"kind":"fidelity"' in line.replace(" ", "")]
    lost = set(fidelity[-drop:])
    (out / VERDICTS).write_text("".join(x for i, x in enumerate(lines) if i not in lost), encoding="utf-8")
    scenarios = suite_scenarios(suite, suite.scenarios.tags)
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, resume=True, progress=False)))
    folder = RunFolder.open(out)
    ids = [r.id for r in folder.conversations()]
    found = Counter((v.conversation_id, v.criterion_id) for v in folder.verdicts() if v.kind == "fidelity")
    assert found == Counter((i, c) for i in ids for c in FIDELITY_CHECKS)  # each exactly once again


def _record(*turns: tuple[str, str], final_state: dict[str, Any] | None = None) -> ConversationRecord:
    now = datetime.now(UTC)
    return ConversationRecord(
        id="c#0", scenario_id="c", repeat=0, stop_reason="user_done", started_at=now, ended_at=now,
        turns=[_turn(i, role, text) for i, (role, text) in enumerate(turns)], final_state=final_state,
    )  # fmt: skip


@pytest.mark.parametrize(
    "line",
    ["my cat knows the courier personally.", "honestly the weather ruins every delivery schedule."],
)
def test_invented_facts_forgive_the_suite_catalogue_lines_only(line: str) -> None:
    from simulator.config.scenario import Scenario
    from simulator.config.styles import StyleCatalogue
    from simulator.judging.fidelity import FidelityAuditor

    scenario = Scenario(id="c", persona="A customer.", goal="Track a parcel.", facts=["It is parcel KP-1."])
    record = _record(("user", f"hi, i want to track a parcel. {line}"))
    catalogue = StyleCatalogue.model_validate(
        {"styles": {"chatty": {"description": "d", "persona": "Chats.", "offline": {"opening": line}}}}
    )
    assert FidelityAuditor().invented_in_code(record, scenario).result == "fail"
    assert FidelityAuditor(styles=catalogue).invented_in_code(record, scenario).result == "pass"


@pytest.mark.parametrize(
    ("bot", "final_state", "key"),
    [
        ("Your parcel status: delivered.", None, None),
        ("Thanks.", {"status": "delivered"}, "status"),
    ],
)
def test_premature_end_reads_the_suite_outcome_not_a_domain(
    bot: str, final_state: dict[str, Any] | None, key: str | None
) -> None:
    from simulator.config.vocabulary import load_vocabulary
    from simulator.judging.fidelity import FidelityAuditor

    parcels = load_vocabulary(ROOT / "examples" / "parcel_vocabulary.yaml")
    record = _record(("user", "where is my parcel"), ("bot", bot), ("user", END), final_state=final_state)
    assert FidelityAuditor().premature_end(record).result == "fail"
    told = FidelityAuditor(outcome_key=key, vocabulary=None if key else parcels)
    assert told.premature_end(record).result == "pass"
