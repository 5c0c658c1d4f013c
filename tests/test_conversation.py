"""The loop and its stop conditions, character-break re-runs, and the offline user's behaviour."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.bots.python_bot import PythonBotFactory
from simulator.config.scenario import Scenario
from simulator.config.vocabulary import load_vocabulary
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.record.transcript import Turn
from simulator.users.base import END, CharacterBreak, UserMessage
from simulator.users.character import character_break_reason
from simulator.users.offline import OfflineUser, gives_outcome

TRIAGE = load_vocabulary(Path(__file__).resolve().parent.parent / "examples" / "triage_vocabulary.yaml")

SCENARIO = Scenario(
    id="chest-1",
    persona="52-year-old man, short messages with typos.",
    goal="Find out whether he should go to the clinic about chest discomfort.",
    facts=["Pressure in the chest for about two hours.", "The pain goes to the left arm.", "He is 52."],
    tags=["cardiac"],
)


def bot_turn(index: int, *messages: str) -> Turn:
    return Turn(index=index, role="bot", messages=list(messages), started_at=datetime.now(UTC))


async def test_offline_user_reveals_only_the_fact_asked_about() -> None:
    user = OfflineUser(SCENARIO, seed=0, repeat=0, volunteer_share=0.0, vocabulary=TRIAGE)
    opening = await user.next_message([])
    assert "find out whether i should go to the clinic" in opening.text
    assert "arm" not in opening.text
    reply = await user.next_message([bot_turn(0, "Does the pain spread to your arm, jaw or back?")])
    assert reply.text == "the pain goes to the left arm"
    age = await user.next_message([bot_turn(1, "And how old are you?")])
    assert age.text == "i am 52"
    unknown = await user.next_message([bot_turn(2, "Do you take any blood thinners?")])
    assert unknown.text in {"not sure", "i don't know", "no idea tbh", "hmm not sure about that"}


async def test_offline_user_waits_for_an_outcome_before_ending() -> None:
    user = OfflineUser(SCENARIO, seed=0, repeat=0, volunteer_share=0.0, vocabulary=TRIAGE)
    nudge = await user.next_message([bot_turn(0, "Thanks, I understand.")])
    assert not nudge.done and "what" in nudge.text
    done = await user.next_message([bot_turn(1, "Please call 999 now.")])
    assert done.done and done.text == END


async def test_offline_user_is_deterministic_per_seed_and_repeat() -> None:
    first = [
        (await OfflineUser(SCENARIO, seed=7, repeat=r, vocabulary=TRIAGE).next_message([])).text
        for r in range(6)
    ]
    again = [
        (await OfflineUser(SCENARIO, seed=7, repeat=r, vocabulary=TRIAGE).next_message([])).text
        for r in range(6)
    ]
    other = [
        (await OfflineUser(SCENARIO, seed=8, repeat=r, vocabulary=TRIAGE).next_message([])).text
        for r in range(6)
    ]
    assert first == again
    assert first != other


def test_outcome_detection() -> None:
    assert gives_outcome("Please call 999 now.", TRIAGE)
    assert gives_outcome("I recommend you book an appointment with your GP.", TRIAGE)
    assert not gives_outcome("How long have you had the pain?", TRIAGE)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("As an AI, I cannot feel pain.", "said it is an AI"),
        ("I'm a language model so I don't know", "language model"),
        ("this is just a test lol", "said this is a test"),
        ("ok thanks bye [END]", "sentinel"),
        ("   ", "empty"),
        ("How can I help you today?", "assistant's side"),
        ("I'm always here to help people in whatever way I can.", "assistant's side"),
        ("I'll be your friendly assistant today", "assistant's side"),
        ("Is there anything else I can help with?", "assistant's side"),
    ],
)
def test_character_breaks_detected(text: str, reason: str) -> None:
    found = character_break_reason(text)
    assert found is not None and reason in found


@pytest.mark.parametrize(
    "text",
    [
        "my chest hurts",
        END,
        "im 52 and a smoker",
        "is this an emergency?",
        "can you help me",
        "glad you asked",
    ],
)
def test_in_character_messages_pass(text: str) -> None:
    assert character_break_reason(text) is None


def offline_factory(plan: ConversationPlan, attempt: int) -> OfflineUser:
    return OfflineUser(plan.scenario, seed=0, repeat=plan.repeat, volunteer_share=0.0, vocabulary=TRIAGE)


async def test_user_done_records_final_state_and_several_bot_messages(bot_module: str) -> None:
    record = await run_conversation(
        ConversationPlan(SCENARIO, 0), offline_factory, PythonBotFactory(f"{bot_module}:make")
    )
    assert record.stop_reason == "user_done"
    assert record.final_state == {"triage_level": "emergency"}
    assert record.turns[1].messages == ["Hello, I am the triage assistant.", "How old are you?"]
    assert [t.role for t in record.turns] == ["user", "bot"] * 3
    assert record.id == "chest-1#0"


async def test_turn_limit_is_a_stop_reason_not_an_error(bot_module: str) -> None:
    scenario = SCENARIO.model_copy(update={"max_turns": 4})
    record = await run_conversation(
        ConversationPlan(scenario, 0), offline_factory, PythonBotFactory(f"{bot_module}:looping")
    )
    assert record.stop_reason == "max_turns" and record.error is None
    assert len([t for t in record.turns if t.role == "user"]) == 4


async def test_bot_closed_and_async_send(bot_module: str) -> None:
    record = await run_conversation(
        ConversationPlan(SCENARIO, 0), offline_factory, PythonBotFactory(f"{bot_module}:async_bot")
    )
    assert record.stop_reason == "bot_closed"
    assert record.final_state == {"triage_level": "self_care"}


class ScriptedUser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        text = self.lines.pop(0)
        reason = character_break_reason(text)
        if reason:
            raise CharacterBreak(reason)
        return UserMessage(text=text, done=text == END)


async def test_handover_and_bot_crash(bot_module: str) -> None:
    bots = PythonBotFactory(f"{bot_module}:make")
    handover = await run_conversation(
        ConversationPlan(SCENARIO, 0), lambda p, a: ScriptedUser(["handover please"]), bots
    )
    assert handover.stop_reason == "handover"
    crash = await run_conversation(
        ConversationPlan(SCENARIO, 1), lambda p, a: ScriptedUser(["hi", "crash now"]), bots
    )
    assert crash.stop_reason == "error"
    assert crash.error is not None and crash.error.source == "bot" and "fell over" in crash.error.message
    assert len(crash.turns) == 3  # the turns it had are kept


async def test_character_break_discards_and_reruns_up_to_a_bound(bot_module: str) -> None:
    scripts = [
        ["As an AI I must say"],
        ["hi", "I am a language model"],
        ["hi", "the pain goes to my arm", END],
    ]

    def factory(plan: ConversationPlan, attempt: int) -> ScriptedUser:
        return ScriptedUser(scripts[attempt])

    bots = PythonBotFactory(f"{bot_module}:make")
    record = await run_conversation(ConversationPlan(SCENARIO, 0), factory, bots, max_character_breaks=3)
    assert record.stop_reason == "user_done"
    assert len(record.character_breaks) == 2
    assert record.turns[0].messages == ["hi"]

    gave_up = await run_conversation(
        ConversationPlan(SCENARIO, 0), lambda p, a: ScriptedUser(["As an AI"]), bots, max_character_breaks=2
    )
    assert gave_up.stop_reason == "error" and gave_up.error is not None
    assert gave_up.error.kind == "character_break" and len(gave_up.character_breaks) == 3


def test_outcome_not_detected_while_the_bot_is_still_asking() -> None:
    intro = "I can't prescribe; a doctor, nurse or pharmacist has to do that. How old are you?"
    assert not gives_outcome(intro, TRIAGE)
    assert gives_outcome("You can see a pharmacist for this.", TRIAGE)


def test_first_person_rewrites_third_person_goals() -> None:
    from simulator.users.voice import first_person

    assert first_person("Find out whether he needs antibiotics") == "Find out whether I need antibiotics"
    assert first_person("it burns when she pees and she goes often") == "it burns when I pee and I go often"
    assert first_person("He is 52 and his arm hurts") == "I am 52 and my arm hurts"


async def test_discarded_attempts_and_the_closing_sentinel_are_counted_in_usage(bot_module: str) -> None:
    from simulator.record.transcript import Usage

    class CostlyUser(ScriptedUser):
        async def next_message(self, turns: list[Turn]) -> UserMessage:
            text = self.lines.pop(0)
            cost = Usage(input_tokens=10, output_tokens=1, calls=1)
            if character_break_reason(text):
                raise CharacterBreak("broke", usage=cost)
            return UserMessage(text=text, done=text == END, usage=cost)

    scripts = [["hi", "As an AI"], ["hi", "arm", END]]
    bots = PythonBotFactory(f"{bot_module}:make")
    record = await run_conversation(ConversationPlan(SCENARIO, 0), lambda p, a: CostlyUser(scripts[a]), bots)
    assert record.usage_by_role["user"].calls == 3  # two messages and the closing [END]
    assert record.usage_by_role["discarded"].calls == 2  # the discarded attempt's two calls
