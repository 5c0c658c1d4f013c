"""A tap says what the typed answer says: the offline patient's Yes / No / Not sure, list rows and typed
replies come from one decision of what it knows (text/meaning.py `knowledge`), and the fidelity audit reads
each tap against the facts itself, so a picker that taps by topic overlap alone fails it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.config.scenario import Scenario
from simulator.config.vocabulary import load_vocabulary
from simulator.judging.fidelity import FidelityAuditor
from simulator.record.models import ConversationRecord
from simulator.record.parts import Option, OptionsPart, PickPart, TextPart
from simulator.record.transcript import Turn
from simulator.text import picking
from simulator.users.offline import OfflineUser

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TRIAGE = load_vocabulary(Path("examples/triage_vocabulary.yaml"))
ECTOPIC = [
    "Sharp pain low on the right side of my tummy since this morning.",
    "My period is two weeks late.",
    "I don't know whether I am pregnant; I have not done a test.",
    "I have not fainted.",
]
HAD_ONE = ["I had an ectopic pregnancy two years ago, before my son was born.", "I have no fever."]
CLOSED = ["My throat is sore.", "No other symptoms."]
YN, YNS = ["Yes", "No"], ["Yes", "No", "Not sure"]


def _scenario(facts: list[str]) -> Scenario:
    goal = "Find out whether the pain low in her tummy can wait for a GP appointment."
    return Scenario(id="s", persona="28-year-old woman, writes plainly.", goal=goal, facts=facts)


def _bot(text: str, options: list[str] | None) -> Turn:
    parts: list[object] = [TextPart(text=text)]
    if options:
        parts.append(OptionsPart(options=[Option(id=t.casefold(), title=t) for t in options]))
    return Turn(index=1, role="bot", parts=parts, started_at=NOW)  # type: ignore[arg-type]


def _answer(facts: list[str], question: str, options: list[str] | None) -> tuple[str, PickPart | None]:
    user = OfflineUser(_scenario(facts), seed=0, repeat=0, volunteer_share=0.0, vocabulary=TRIAGE)
    opening = asyncio.run(user.next_message([]))
    first = Turn(index=0, role="user", messages=[opening.text], started_at=NOW)
    said = asyncio.run(user.next_message([first, _bot(question, options)]))
    return said.text, said.pick


# facts, question, what any widget must say: a fact's number that says yes / no, or "unsure"
CASES = [
    (ECTOPIC, "Have you ever had an ectopic pregnancy before?", "unsure"),  # the tester's case
    (ECTOPIC, "Could you be pregnant?", "unsure"),  # "I don't know whether I am pregnant"
    (ECTOPIC, "Is there any bleeding from the vagina?", "unsure"),  # no fact: no closed-world "No"
    (ECTOPIC, "Do you have a fever?", "unsure"),
    (ECTOPIC, "Have you fainted or felt dizzy?", "no 4"),  # a denied fact
    (ECTOPIC, "Do you have pain in your tummy?", "yes 1"),  # an affirmed fact
    (HAD_ONE, "Have you ever had an ectopic pregnancy before?", "yes 1"),  # a prior-history fact
    (HAD_ONE, "Do you have a fever?", "no 2"),
    (CLOSED, "Do you have any chest pain?", "no 2"),  # a blanket negative rules it out
]


@pytest.mark.parametrize(("facts", "question", "says"), CASES)
def test_one_question_gets_one_answer_whatever_the_widget(facts: list[str], question: str, says: str) -> None:
    verdict, _, number = says.partition(" ")
    typed, _ = _answer(facts, question, None)
    _, with_unsure = _answer(facts, question, YNS)
    text, yes_no = _answer(facts, question, YN)
    if verdict == "unsure":
        assert with_unsure is not None and with_unsure.title == "Not sure"
        assert yes_no is None and text == typed  # no "Not sure" button: it types what it would have typed
    else:
        tap = "Yes" if verdict == "yes" else "No"
        assert with_unsure is not None and with_unsure.title == tap and with_unsure.facts == [int(number)]
        assert yes_no is not None and yes_no.title == tap and yes_no.basis == "fact"
        assert facts[int(number) - 1] in typed  # the typed answer tells the fact the tap rests on


def test_a_list_row_needs_a_fact_and_none_of_these_a_fact_that_says_so() -> None:
    rows = ["Bleeding", "Shoulder tip pain", "Fever"]
    text, pick = _answer(ECTOPIC, "Do you have any of these?", [*rows, "None of these"])
    assert pick is None and text  # nothing says yes or no to any row: it types, never "None of these"
    _, pick = _answer(CLOSED, "Do you have any of these?", [*rows, "None of these"])
    assert pick is not None and pick.title == "None of these" and pick.facts == [2]
    _, pick = _answer(ECTOPIC, "Which is it?", ["Tummy pain", "Headache"])
    assert pick is not None and pick.title == "Tummy pain" and pick.facts == [1]


def _tapped(question: str, title: str, facts: list[int]) -> ConversationRecord:
    turns = [
        Turn(index=0, role="user", messages=["hi"], started_at=NOW),
        _bot(question, YN),
        Turn(
            index=2,
            role="user",
            parts=[PickPart(id=title.casefold(), title=title, facts=facts)],
            started_at=NOW,
        ),
    ]
    return ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason="user_done",
        started_at=NOW,
        ended_at=NOW,
        turns=turns,
    )


@pytest.mark.parametrize(
    ("question", "title", "facts", "fails"),
    [
        (
            "Have you ever had an ectopic pregnancy before?",
            "Yes",
            [2],
            "fact 2 'My period is two weeks late.'",
        ),
        ("Could you be pregnant?", "Yes", [2], "no fact says so"),
        ("Is there any bleeding from the vagina?", "No", [], "no fact rules it out"),
        ("Have you fainted or felt dizzy?", "Yes", [], "against fact 4 'I have not fainted.'"),
        ("Have you fainted or felt dizzy?", "No", [4], ""),
        ("Do you have pain in your tummy?", "Yes", [1], ""),
    ],
)
def test_the_audit_reads_a_tap_against_the_facts(
    question: str, title: str, facts: list[int], fails: str
) -> None:
    auditor = FidelityAuditor(None, None, None, vocabulary=TRIAGE)
    verdict = auditor.invented_in_code(_tapped(question, title, facts), _scenario(ECTOPIC))
    assert verdict.result == ("fail" if fails else "pass")
    assert fails in verdict.reasoning and (not fails or [e.quote for e in verdict.evidence or []] == [title])


def test_a_picker_that_taps_by_topic_overlap_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def overlap(known, yes, no, unsure):  # type: ignore[no-untyped-def]  # the planted bug: any fact on the subject says yes
        if known.told:
            return picking.Choice(yes, known.told, "fact", "on the subject")
        return picking.Choice(no, [], "negative", "closed world")

    monkeypatch.setattr(picking, "_answer", overlap)
    question = "Have you ever had an ectopic pregnancy before?"
    _, pick = _answer(ECTOPIC, question, YN)
    assert pick is not None and pick.title == "Yes"  # the bug is planted
    record = _tapped(question, pick.title, pick.facts or [])
    verdict = FidelityAuditor(None, None, None, vocabulary=TRIAGE).invented_in_code(
        record, _scenario(ECTOPIC)
    )
    assert verdict.result == "fail" and "My period is two weeks late." in verdict.reasoning


def test_the_decision_is_one_home_for_typed_and_tapped() -> None:
    from simulator.text.meaning import knowledge  # the one home (absent before it was made one)

    reader = OfflineUser(_scenario(ECTOPIC), vocabulary=TRIAGE)._reader
    facts = [reader.read(f) for f in ECTOPIC]
    known = knowledge(reader.read("Have you ever had an ectopic pregnancy before?"), facts)
    assert known.answer == "unsure" and known.yes == [] and 1 in known.told  # told when typed, never a yes
