"""Tests for the example triage bot (python and HTTP) and the shipped triage vignettes and criteria."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from examples.http_triage_bot import serve_in_thread
from examples.triage_bot import TriageBot, make_bot
from examples.triage_rules import find_flags, load_rules, normalise, parse_age, parse_duration_days
from simulator.config.styles import load_styles

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios" / "triage"
JUDGES = ROOT / "judges" / "triage"
LEVELS = ["self_care", "gp", "urgent", "emergency"]


def talk(bot: TriageBot, *messages: str) -> list[list[str]]:
    """Send scripted user messages in order; return every reply."""
    return [bot.send(m) for m in messages]


def level(bot: TriageBot) -> str | None:
    state = bot.final_state()
    return None if state is None else state["triage_level"]


# --- the python bot ----------------------------------------------------------------------------------


def test_stroke_signs_volunteered_are_triaged_emergency_at_once() -> None:
    bot = make_bot()
    replies = talk(bot, "my mum's face is drooping on one side and her speech is slurred")
    assert level(bot) == "emergency"
    assert "999" in replies[-1][-1] and "A&E" in replies[-1][-1]


def test_stroke_signs_found_by_asking_after_a_vague_start() -> None:
    bot = make_bot()
    replies = talk(bot, "dad seems confused since lunch", "he is 74 years old")
    assert level(bot) is None
    assert "face" in replies[-1][-1] and "arm" in replies[-1][-1] and "speech" in replies[-1][-1]
    talk(bot, "one side of his face looks droopy")
    assert level(bot) == "emergency"


def test_chest_pain_without_arm_mention_is_under_triaged_the_documented_flaw() -> None:
    bot = make_bot()
    replies = talk(bot, "pressure in my chest since this afternoon", "52", "my breathing is ok I think")
    asked = " ".join(m for r in replies for m in r).lower()
    assert level(bot) == "urgent"  # the vignette's correct answer is emergency: the bot under-triages
    assert "breath" in asked
    for word in ("arm", "jaw", "spread", "radiat"):
        assert word not in asked, f"the bot asked about {word!r}; the documented flaw is gone"


def test_chest_pain_with_arm_volunteered_is_emergency() -> None:
    bot = make_bot()
    talk(bot, "chest pressure for two hours", "52", "no, but the ache spreads into my left arm")
    assert level(bot) == "emergency"


def test_chest_pain_with_breathlessness_is_emergency() -> None:
    bot = make_bot()
    talk(bot, "heavy feeling in my chest", "I am 78 years old", "yes, I get short of breath walking")
    assert level(bot) == "emergency"


def test_common_cold_is_self_care_with_safety_netting() -> None:
    bot = make_bot()
    replies = talk(
        bot,
        "do I need antibiotics for a cold? runny nose and sore throat",
        "25",
        "no stiff neck and no rash, breathing is fine",
        "three days",
    )
    assert level(bot) == "self_care"
    assert "prescribe" in replies[0][0]  # declines the antibiotics request up front
    advice = replies[-1][-1]
    assert "at home" in advice and "If you find it hard to breathe" in advice


def test_ectopic_pregnancy_risk_is_asked_and_escalated() -> None:
    bot = make_bot()
    replies = talk(bot, "cramps low on one side of my belly", "27")
    assert "pregnant" in replies[-1][-1]
    talk(bot, "my period is about two weeks late")
    assert level(bot) is None
    talk(bot, "I felt faint when I stood up earlier")
    assert level(bot) == "emergency"


def test_pregnancy_is_not_asked_of_a_man() -> None:
    bot = make_bot()
    replies = talk(bot, "I'm a man and I have tummy pain", "40", "no")
    assert all("pregnant" not in m for r in replies for m in r)


def test_suicidal_thoughts_get_crisis_advice() -> None:
    bot = make_bot()
    replies = talk(bot, "can you give me something to help me sleep", "34")
    assert "ending their life" in replies[-1][-1]
    replies = talk(bot, "sometimes I have thoughts about ending my life")
    assert level(bot) == "emergency"
    assert "999" in replies[-1][-1] and "116 123" in replies[-1][-1]


def test_negated_danger_sign_does_not_escalate() -> None:
    bot = make_bot()
    talk(
        bot,
        "sunburn on my shoulders since yesterday",
        "36",
        "the skin is red and sore but not blistered, no fever",
    )
    assert level(bot) == "self_care"


def test_state_is_fresh_per_instance() -> None:
    first, second = make_bot(), make_bot()
    talk(first, "my face is drooping and speech slurred")
    assert level(first) == "emergency"
    assert second.final_state() is None
    replies = talk(second, "hello")
    assert level(second) is None
    assert "main problem" in replies[0][-1]


def test_after_the_decision_the_bot_stops_asking_and_reescalates_on_a_new_red_flag() -> None:
    bot = make_bot()
    talk(bot, "pressure in my chest since this afternoon", "52", "my breathing is ok")
    assert level(bot) == "urgent"
    (closing,) = talk(bot, "ok thanks")
    assert "?" not in " ".join(closing) and level(bot) == "urgent"
    (changed,) = talk(bot, "actually it goes into my jaw too")
    assert level(bot) == "emergency" and "999" in changed[-1]


def test_text_helpers() -> None:
    assert parse_age("he is 74 years old") == 74
    assert parse_age("my 8-year-old daughter") == 8
    assert parse_age("she is six months old") == 0.5
    assert parse_age("52", answering_age=True) == 52
    assert parse_age("52") is None
    assert parse_duration_days("cough for three weeks now") == 21
    assert parse_duration_days("my period is two weeks late") is None
    assert parse_duration_days("about twenty-five minutes ago") == pytest.approx(25 / 1440)
    assert parse_age("she is twenty-seven years old") == 27
    flags = load_rules().global_flags
    assert find_flags(normalise("I can't breathe"), flags)
    assert not find_flags(normalise("no swelling of my lips or tongue"), flags)


# --- the HTTP bot ------------------------------------------------------------------------------------


@pytest.fixture
def http_bot() -> Iterator[str]:
    url, shutdown = serve_in_thread(token="s3cret")
    yield url
    shutdown()


def test_http_bot_answers_per_contract(http_bot: str) -> None:
    headers = {"Authorization": "Bearer s3cret"}
    with httpx.Client(timeout=10) as client:
        first = client.post(
            http_bot, json={"conversation_id": "a", "turn": 0, "message": "hi"}, headers=headers
        )
        assert first.status_code == 200
        body = first.json()
        assert set(body) == {"messages", "handed_over", "closed", "state"}
        assert body["handed_over"] is False and body["closed"] is False and body["state"] is None
        assert isinstance(body["messages"], list) and all(isinstance(m, str) for m in body["messages"])

        done = client.post(
            http_bot,
            json={
                "conversation_id": "b",
                "turn": 0,
                "message": "my face is drooping and my speech is slurred",
            },
            headers=headers,
        ).json()
        assert done["closed"] is True and done["state"]["triage_level"] == "emergency"

        # conversation "a" kept its own state: it is still waiting for the complaint
        again = client.post(
            http_bot, json={"conversation_id": "a", "turn": 1, "message": "hello?"}, headers=headers
        ).json()
        assert again["state"] is None and "main problem" in again["messages"][-1]

        # a retried turn is answered from memory, not sent to the bot a second time
        retry = client.post(
            http_bot, json={"conversation_id": "a", "turn": 1, "message": "hello?"}, headers=headers
        ).json()
        assert retry == again
        third = client.post(
            http_bot, json={"conversation_id": "a", "turn": 2, "message": "a sunburn"}, headers=headers
        ).json()
        assert "How old" in third["messages"][-1]


def test_http_bot_rejects_wrong_token_and_bad_bodies(http_bot: str) -> None:
    payload = {"conversation_id": "x", "turn": 0, "message": "hi"}
    with httpx.Client(timeout=10) as client:
        assert (
            client.post(http_bot, json=payload, headers={"Authorization": "Bearer nope"}).status_code == 401
        )
        assert client.post(http_bot, json=payload).status_code == 401
        good = {"Authorization": "Bearer s3cret"}
        assert client.post(http_bot, content=b"not json", headers=good).status_code == 400
        assert client.post(http_bot, json={"turn": 0, "message": "hi"}, headers=good).status_code == 400
        assert client.post(http_bot.replace("/chat", "/other"), json=payload, headers=good).status_code == 404


def test_http_bot_without_token_accepts_any_request() -> None:
    url, shutdown = serve_in_thread()
    try:
        r = httpx.post(url, json={"conversation_id": "c", "turn": 0, "message": "sunburn"}, timeout=10)
        assert r.status_code == 200 and r.json()["messages"]
    finally:
        shutdown()


# --- the shipped content -----------------------------------------------------------------------------

SCENARIO_KEYS = {
    "id",
    "persona",
    "goal",
    "facts",
    "speaker",
    "expected",
    "max_turns",
    "tags",
    "language",
    "notes",
    "key_facts",
}
REQUIRED_SCENARIO_KEYS = {"id", "persona", "goal", "facts", "expected", "tags"}
JUDGE_KEYS = {"id", "criterion", "pass", "fail", "not_applicable", "applies_to", "severity", "category"}
SCENARIO_FILES = sorted(p for p in SCENARIOS.glob("*.yaml") if p.name != "suite.yaml")


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_scenario_file_is_well_formed(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    assert REQUIRED_SCENARIO_KEYS <= set(data) <= SCENARIO_KEYS, set(data) ^ SCENARIO_KEYS
    assert data["id"] == path.stem
    assert set(data["expected"]) == {"triage_level"} and data["expected"]["triage_level"] in LEVELS
    assert all(isinstance(f, str) and f for f in data["facts"]) and len(data["facts"]) >= 3
    assert isinstance(data["tags"], list) and data["tags"]
    if data["expected"]["triage_level"] == "emergency":
        assert "high-stakes" in data["tags"]


def test_scenario_set_is_balanced_and_ids_unique() -> None:
    data = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in SCENARIO_FILES]
    ids = [d["id"] for d in data]
    assert len(ids) == len(set(ids)) >= 16
    per_level = {lvl: sum(d["expected"]["triage_level"] == lvl for d in data) for lvl in LEVELS}
    assert min(per_level.values()) >= 3
    assert per_level["emergency"] == max(per_level.values())


def test_suite_file_points_at_existing_things() -> None:
    suite = yaml.safe_load((SCENARIOS / "suite.yaml").read_text(encoding="utf-8"))
    assert suite["outcome"]["levels"] == LEVELS
    assert suite["bot"]["factory"] == "examples.triage_bot:make_bot"
    for rel in suite["judges"]["paths"]:
        assert (SCENARIOS / rel).resolve() == JUDGES.resolve()


@pytest.mark.parametrize("path", sorted(JUDGES.glob("*.yaml")), ids=lambda p: p.stem)
def test_judge_file_is_well_formed(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(data) == JUDGE_KEYS
    assert data["id"] == path.stem
    assert data["severity"] in {"critical", "major", "minor"}
    assert data["category"] in {"omission", "safety", "scope", "communication"}
    assert isinstance(data["applies_to"], list)
    assert all(
        isinstance(data[k], str) and data[k].strip() for k in ("criterion", "pass", "fail", "not_applicable")
    )


def test_judge_tags_exist_in_some_scenario() -> None:
    tags = {t for p in SCENARIO_FILES for t in yaml.safe_load(p.read_text(encoding="utf-8"))["tags"]}
    styles = load_styles(Path(__file__).resolve().parent.parent / "examples" / "triage_styles.yaml").styles
    tags |= {t for style in styles.values() for t in style.tags}  # red-team factor levels tag their variants
    judges = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in JUDGES.glob("*.yaml")]
    assert len(judges) >= 6
    for judge in judges:
        assert set(judge["applies_to"]) <= tags, judge["id"]
