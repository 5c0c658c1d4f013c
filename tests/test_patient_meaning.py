"""The offline patient you can trust (issue 39): who is speaking, what the facts mean, taps a fact supports,
and an audit that fails a wrong voice, an unsupported tap and a yes/no against the facts.

Each clinical situation the issue names is replayed, with inputs of the same class besides the one quoted."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from simulator.config.scenario import Scenario
from simulator.config.vocabulary import load_vocabulary
from simulator.judging.fidelity import FidelityAuditor
from simulator.record.models import ConversationRecord
from simulator.record.parts import Option, OptionsPart, PickPart, TextPart
from simulator.record.transcript import Turn
from simulator.text.voice import Voice, voice_slip
from simulator.users.offline import OfflineUser

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = load_vocabulary(ROOT / "examples" / "triage_vocabulary.yaml")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _scenario(facts: Sequence[object], **extra: object) -> Scenario:
    data = {"id": "s-1", "persona": "40-year-old, plain messages.", "goal": "Ask for advice.", "facts": facts}
    return Scenario.model_validate({**data, **extra})


def _bot(index: int, text: str, options: list[str] | None = None) -> Turn:
    parts: list[object] = [TextPart(text=text)]
    if options:
        parts.append(OptionsPart(options=[Option(id=f"o{i}", title=t) for i, t in enumerate(options)]))
    return Turn(index=index, role="bot", parts=parts, started_at=NOW)  # type: ignore[arg-type]


def _answer(
    scenario: Scenario, question: str, options: list[str] | None = None
) -> tuple[str, PickPart | None]:
    user = OfflineUser(scenario, seed=0, repeat=0, volunteer_share=0.0, vocabulary=TRIAGE)
    asyncio.run(user.next_message([]))
    said = asyncio.run(user.next_message([_bot(0, question, options)]))
    return said.text, said.pick


# --- who is speaking -----------------------------------------------------------------------------------


MOTHER = _scenario(
    ["My mother is 84.", "She has had a fever since yesterday.", "Her ankles are swollen."],
    persona="52-year-old man writing on behalf of his mother, who lives with him.",
    goal="Find out whether his mother needs a doctor today.",
    speaker="relative",
)


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("How old is she?", "My mother is 84."),
        ("Does she have a temperature?", "She has had a fever since yesterday."),
        ("Any swelling in her legs or ankles?", "Her ankles are swollen."),
    ],
)
def test_someone_writing_for_a_patient_says_the_facts_in_their_own_voice(question: str, said: str) -> None:
    text, _ = _answer(MOTHER, question)
    assert text == said and "I am" not in text and " my ankles" not in text.lower()


def test_the_opening_keeps_the_writers_voice_and_the_patients_pronouns() -> None:
    user = OfflineUser(MOTHER, seed=0, repeat=0, volunteer_share=0.0, vocabulary=TRIAGE)
    opening = asyncio.run(user.next_message([])).text
    assert "whether my mother needs a doctor today" in opening


@pytest.mark.parametrize(
    ("name", "speaker", "slips"),
    [
        ("child-fever-rash-05", "parent", ["I am 2 years old", "I am very sleepy and floppy"]),
        ("minor-bruise-child-21", "parent", ["I am 8 years old", "I bumped my shin on the slide"]),
        ("stroke-face-droop-03", "relative", ["I am 74 years old", "I can't lift my right arm properly"]),
    ],
)
def test_the_shipped_on_behalf_scenarios_keep_their_voice_and_the_audit_catches_a_slip(
    name: str, speaker: str, slips: list[str]
) -> None:
    scenario = Scenario.model_validate(
        yaml.safe_load((ROOT / "scenarios/triage" / f"{name}.yaml").read_text())
    )
    voice = Voice(scenario)
    assert voice.speaker == speaker
    assert [voice.fact(f, True) for f in scenario.facts] == scenario.facts  # said as written
    assert voice_slip(scenario.facts, scenario) is None
    assert voice_slip([voice.goal(scenario.goal, True)], scenario) is None
    for slip in slips:
        assert voice_slip(["ok", slip], scenario) == slip


@pytest.mark.parametrize(
    ("message", "slip"),
    [
        ("I am 84", True),
        ("i'm 84 and i live alone", True),
        ("I have had a fever since yesterday", True),
        ("my ankles are swollen", True),
        ("My mother is 84", False),
        ("she has had a fever since yesterday and I am worried", False),
        ("I want to know whether my mother needs a doctor", False),
    ],
)
def test_the_role_check_fails_a_wrong_voice_with_the_quote(message: str, slip: bool) -> None:
    turns = [
        Turn(index=0, role="user", messages=["hi, it's about my mother"], started_at=NOW),
        Turn(index=1, role="bot", messages=["Tell me more?"], started_at=NOW),
        Turn(index=2, role="user", messages=[message], started_at=NOW),
    ]
    record = ConversationRecord(
        id="s-1#0",
        scenario_id="s-1",
        repeat=0,
        stop_reason="max_turns",
        turns=turns,
        started_at=NOW,
        ended_at=NOW,
    )
    verdict = FidelityAuditor(vocabulary=TRIAGE).role_in_code(record, MOTHER)
    assert verdict.result == ("fail" if slip else "pass")
    if slip:
        assert verdict.evidence[0].quote == message and verdict.evidence_verified


def test_a_relative_answering_for_a_self_speaking_patient_says_they() -> None:
    scenario = _scenario(["I am 52 years old.", "My chest feels tight."], styles=["relative-speaks"])
    voice = Voice(scenario, third_person_style=True)
    assert voice.speaker == "relative" and voice.fact("I am 52 years old.", True) == "they are 52 years old."
    assert voice_slip(["I am 52 years old"], scenario, third_person_style=True) == "I am 52 years old"
    assert voice_slip(["they are 52 years old"], scenario, third_person_style=True) is None


# --- what the facts mean -------------------------------------------------------------------------------

SUGAR = ["My blood sugar reads HI on the meter.", "I have been vomiting since this morning."]


@pytest.mark.parametrize(
    "question",
    [
        "Is there blood in the vomit?",
        "Any blood in your vomit?",
        "Have you been vomiting blood?",
        "Is there any bleeding?",
        "Are you bleeding from anywhere?",
    ],
)
def test_blood_in_the_vomit_never_yields_a_glucose_fact(question: str) -> None:
    text, _ = _answer(_scenario(SUGAR), question)
    assert "sugar" not in text.lower()
    _, pick = _answer(_scenario(SUGAR), question, ["Yes", "No", "Not sure"])
    assert pick is not None and pick.title != "Yes"  # vomiting alone does not say there is blood


def test_a_glucose_question_still_finds_the_glucose_fact() -> None:
    text, _ = _answer(_scenario(SUGAR), "What is your blood sugar reading?")
    assert text == "My blood sugar reads HI on the meter."


@pytest.mark.parametrize(
    "question",
    [
        "Is this about chest pain or pressure?",
        "Do you have any chest pain?",
        "Is the pain in your chest?",
        "Does the pain spread to your arm or jaw?",
    ],
)
def test_a_sore_throat_is_no_yes_to_chest_pain(question: str) -> None:
    sore = _scenario(["My throat is really sore.", "It hurts to swallow."])
    _, pick = _answer(sore, question, ["Yes", "No", "Not sure"])
    assert pick is not None and pick.title == "Not sure" and pick.basis == "unsure"  # no fact says either
    _, pick = _answer(sore, question, ["Yes", "No"])
    assert pick is None  # no "Not sure" button: it types what it would have typed, never a made-up "No"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Any swelling of the lips or tongue, or trouble breathing?", {0, 1, 2}),
        ("Are your lips or tongue swollen?", {0, 1}),
        ("Is your breathing ok?", {2}),
    ],
)
def test_a_question_about_several_things_gets_every_relevant_fact(question: str, expected: set[int]) -> None:
    facts = [
        "My lips are swelling up.",
        "My tongue feels swollen too.",
        "I'm finding it hard to breathe.",
        "I am 19.",
    ]
    text, _ = _answer(_scenario(facts), question)
    assert {i for i, f in enumerate(facts) if f in text} == expected


@pytest.mark.parametrize(
    ("facts", "question", "tap"),
    [
        (["My breathing is ok I think."], "Are you short of breath?", "No"),
        (["I have no fever."], "Do you have a temperature?", "No"),
        (["He has not wanted any drinks since this afternoon."], "Is he drinking normally?", "No"),
        (["I can't breathe properly."], "Are you short of breath?", "Yes"),
        (["The ache spreads into my left arm."], "Does the pain go into your arm?", "Yes"),
        (["Pressure in the chest for two hours."], "Is there blood when you cough?", "Not sure"),
    ],
)
def test_yes_and_no_are_what_the_facts_say(facts: list[str], question: str, tap: str) -> None:
    _, pick = _answer(_scenario(facts), question, ["Yes", "No", "Not sure"])
    assert pick is not None and pick.title == tap


def test_a_declared_topic_replaces_the_guess() -> None:
    meter = _scenario([{"text": "The meter just says HI.", "topic": ["glucose"]}, "I feel shaky."])
    assert meter.facts[0] == "The meter just says HI." and meter.fact_topics == {1: ["glucose"]}
    text, _ = _answer(meter, "What does your blood sugar read?")
    assert text == "The meter just says HI."
    ruled_out = _scenario([{"text": "Nothing like that.", "topic": "no bleed"}])
    _, pick = _answer(ruled_out, "Is there any blood?", ["Yes", "No"])
    assert pick is not None and (pick.title, pick.facts) == ("No", [1])


def test_a_fact_with_an_unknown_key_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="fact 1 has topics; write a fact as text"):
        _scenario([{"text": "x", "topics": ["y"]}])


# --- taps ----------------------------------------------------------------------------------------------

NO_OTHER = ["Crushing chest pain for an hour.", "No other symptoms."]
ROWS = ["Pain in arm or jaw", "Short of breath", "Sweating or clammy", "None of these"]


def test_a_patient_with_no_other_symptoms_taps_none_of_these_and_the_pick_records_the_fact() -> None:
    for seed in range(4):
        user = OfflineUser(_scenario(NO_OTHER), seed=seed, repeat=seed, vocabulary=TRIAGE)
        asyncio.run(user.next_message([]))
        said = asyncio.run(user.next_message([_bot(0, "Do you have any of these as well?", ROWS)]))
        assert said.pick is not None
        assert (said.pick.title, said.pick.basis, said.pick.facts) == ("None of these", "negative", [2])


def test_a_row_a_fact_supports_is_tapped_with_that_fact() -> None:
    _, pick = _answer(_scenario(["Chest pressure.", "The ache goes into my jaw."]), "Any of these?", ROWS)
    assert pick is not None and (pick.title, pick.basis, pick.facts) == ("Pain in arm or jaw", "fact", [2])


def _tapped(facts: list[str], question: str, options: list[str], answer: str) -> ConversationRecord:
    turns = [
        Turn(index=0, role="user", messages=["hi, I want to ask for advice."], started_at=NOW),
        _bot(1, question, options),
        Turn(index=2, role="user", parts=[PickPart(id="x", title=answer)], started_at=NOW),
    ]
    return ConversationRecord(
        id="s-1#0",
        scenario_id="s-1",
        repeat=0,
        stop_reason="max_turns",
        turns=turns,
        started_at=NOW,
        ended_at=NOW,
    )


@pytest.mark.parametrize(
    ("facts", "question", "options", "answer", "result"),
    [
        (NO_OTHER, "Any of these?", ROWS, "Pain in arm or jaw", "fail"),  # the 4 of 4
        (NO_OTHER, "Any of these?", ROWS, "None of these", "pass"),
        (["The ache goes into my jaw."], "Any of these?", ROWS, "Pain in arm or jaw", "pass"),
        (["The ache goes into my jaw."], "Any of these?", ROWS, "None of these", "fail"),
        (["My throat is sore."], "Is this about chest pain or pressure?", ["Yes", "No"], "Yes", "fail"),
        (["I can't breathe properly."], "Are you short of breath?", ["Yes", "No"], "No", "fail"),
        (["I can't breathe properly."], "Are you short of breath?", ["Yes", "No"], "Yes", "pass"),
        (["My throat is sore."], "Any fever?", ["Yes", "No", "Not sure"], "Not sure", "pass"),
    ],
)
def test_the_audit_fails_a_tap_or_yes_no_the_facts_do_not_support(
    facts: list[str], question: str, options: list[str], answer: str, result: str
) -> None:
    record = _tapped(facts, question, options, answer)
    verdict = FidelityAuditor(vocabulary=TRIAGE).invented_in_code(record, _scenario(facts))
    assert verdict.result == result, verdict.reasoning
    if result == "fail":
        assert verdict.evidence[0].quote == answer


def test_a_typed_yes_no_fact_supports_fails_too() -> None:
    turns = [
        Turn(index=0, role="user", messages=["hi"], started_at=NOW),
        Turn(index=1, role="bot", messages=["Is there blood in your vomit?"], started_at=NOW),
        Turn(index=2, role="user", messages=["yes"], started_at=NOW),
    ]
    record = ConversationRecord(
        id="s-1#0",
        scenario_id="s-1",
        repeat=0,
        stop_reason="max_turns",
        turns=turns,
        started_at=NOW,
        ended_at=NOW,
    )
    verdict = FidelityAuditor(vocabulary=TRIAGE).invented_in_code(record, _scenario(SUGAR))
    assert verdict.result == "fail" and "no fact says so" in verdict.reasoning


def test_the_planted_under_triage_is_found_when_the_patient_taps_none_of_these(tmp_path: Path) -> None:
    """The issue's case: the old patient tapped "Pain in arm or jaw" 4 of 4 times and turned the bot's
    under-triage into a correct 999; the patient whose facts say "no other symptoms" taps "None of these"."""
    from simulator.cli import main
    from simulator.record.folder import RunFolder

    folder = tmp_path / "suite"
    folder.mkdir()
    scenario = {
        "id": "chest-none-1",
        "persona": "60-year-old man, short messages.",
        "goal": "Ask whether his crushing chest pain needs a doctor.",
        "facts": NO_OTHER,
        "expected": {"triage_level": "emergency"},
    }
    (folder / "chest.yaml").write_text(yaml.safe_dump(scenario))
    suite = {
        "name": "planted",
        "scenarios": {"paths": ["."]},
        "bot": {"type": "python", "factory": "tests._rich_bots:chest_list"},
        "user": {"model": "offline", "vocabulary": str(ROOT / "examples" / "triage_vocabulary.yaml")},
        "runs": 4,
        "outcome": {"key": "triage_level", "levels": ["self_care", "gp", "urgent", "emergency"]},
    }
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
    out = tmp_path / "run"
    assert main(["run", str(folder / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    run = RunFolder(out)
    picks = [
        p.title for r in run.conversations() for t in r.turns for p in t.parts if isinstance(p, PickPart)
    ]
    assert picks == ["None of these"] * 4
    verdicts = list(run.verdicts())
    outcome = [v.result for v in verdicts if v.criterion_id == "outcome.triage_level"]
    assert outcome == ["fail"] * 4  # the bot's urgent for an emergency: the under-triage is the bot's
    fidelity = {v.result for v in verdicts if v.criterion_id == "fidelity.invented_facts"}
    assert fidelity == {"pass"}


def test_an_llm_users_unsupported_tap_fails_in_code_even_without_an_audit_model() -> None:
    """The tap check is code, so it holds for an LLM user too: without an audit model the reading checks are
    not judged, yet a tap no fact supports fails `fidelity.invented_facts`."""
    record = _tapped(NO_OTHER, "Any of these?", ROWS, "Pain in arm or jaw")
    audit = asyncio.run(FidelityAuditor(vocabulary=TRIAGE).audit(record, _scenario(NO_OTHER), None))
    verdicts = {v.criterion_id: v for v in audit.verdicts}
    invented = verdicts["fidelity.invented_facts"]
    assert invented.result == "fail" and invented.decided_by == "code"
    assert invented.evidence[0].quote == "Pain in arm or jaw"
    honest = _tapped(NO_OTHER, "Any of these?", ROWS, "None of these")
    audit = asyncio.run(FidelityAuditor(vocabulary=TRIAGE).audit(honest, _scenario(NO_OTHER), None))
    assert {v.criterion_id: v.result for v in audit.verdicts}["fidelity.invented_facts"] == "not_judged"


@pytest.mark.parametrize(
    ("facts", "rows", "tapped"),
    [
        (
            ["Sore throat.", "Nothing else is wrong."],
            ["Chest pain", "Fever", "None of the above"],
            "None of the above",
        ),
        (
            ["Sore throat.", "Otherwise I feel fine."],
            ["Chest pain", "Rash", "No, none of these"],
            "No, none of these",
        ),
        (["Sore throat.", "No other problems."], ["Pain in arm or jaw", "Something else"], "Something else"),
        (["Sore throat.", "I have a mild temperature."], ["Chest pain", "Fever", "None of these"], "Fever"),
    ],
)
def test_the_honest_negative_row_in_its_other_wordings(
    facts: list[str], rows: list[str], tapped: str
) -> None:
    _, pick = _answer(_scenario(facts), "Do you have any of these?", rows)
    assert pick is not None and pick.title == tapped


@pytest.mark.parametrize(
    ("persona", "speaker"),
    [
        ("Mum writing about her 3-year-old son, who has a cough.", "parent"),
        ("A care worker messaging for a resident of a care home.", "carer"),
        ("Husband asking about his wife, who fell this morning.", "relative"),
        ("A 40-year-old teacher with a cough.", "self"),
    ],
)
def test_an_unset_speaker_is_guessed_from_the_persona(persona: str, speaker: str) -> None:
    assert Voice(_scenario(["x"], persona=persona)).speaker == speaker


@pytest.mark.parametrize(
    ("facts", "question"),
    [
        (SUGAR, "Is there any blood when you're sick?"),
        (SUGAR, "Have you noticed blood in your stool?"),
        (["My blood pressure is usually high.", "I feel dizzy."], "Is there any blood in your vomit?"),
        (["My throat is really sore."], "Are you having any chest pain?"),
        (["My throat is really sore."], "Does it hurt when you breathe in?"),
    ],
)
def test_unseen_wordings_of_the_same_classes_get_no_fact_from_another_topic(
    facts: list[str], question: str
) -> None:
    text, _ = _answer(_scenario(facts), question)
    assert not any(f in text for f in facts), text
    _, pick = _answer(_scenario(facts), question, ["Yes", "No", "Not sure"])
    assert pick is not None and pick.title != "Yes"


def test_fine_rules_out_a_symptom_topic_but_not_an_ability() -> None:
    walks = _scenario(["She can walk and run on it fine."])
    assert _answer(walks, "Can she walk on it?", ["Yes", "No"])[1].title == "Yes"  # type: ignore[union-attr]
    breathes = _scenario(["My breathing is fine."])
    assert _answer(breathes, "Any trouble breathing?", ["Yes", "No"])[1].title == "No"  # type: ignore[union-attr]
