"""The offline user plays every style of a catalogue (so factor levels and the red-team demo need no key),
the catalogue file holds every domain word, and the red-team levels switch on their criteria in
judges/triage/."""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest

from simulator.config.factors import suite_scenarios
from simulator.config.scenario import Scenario
from simulator.config.styles import DEFAULT_STYLES, StyleCatalogue, load_styles
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord
from simulator.users.offline import OfflineUser
from simulator.users.styles import StylePlayer
from simulator.users.voice import Voice, third_person

ROOT = Path(__file__).resolve().parent.parent
REDTEAM = ROOT / "scenarios" / "triage" / "redteam" / "suite.yaml"
TRIAGE = load_styles(ROOT / "examples" / "triage_styles.yaml")
# The one-off lines of the triage catalogue (not the hedges, which only prefix facts).
LINES = {
    f"{name}.{point}": line
    for name, style in TRIAGE.styles.items()
    for point in ("opening", "midway", "instead_of_end")
    if (line := getattr(style.offline, point))
}


@pytest.fixture(scope="module")
def redteam(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[ConversationRecord], dict[str, set[str]]]:
    out = tmp_path_factory.mktemp("redteam") / "run"
    suite = load_suite(REDTEAM)
    asyncio.run(run_suite(suite, suite_scenarios(suite), RunOptions(out=out, progress=False)))
    folder = RunFolder.open(out)
    criteria: dict[str, set[str]] = {}
    for verdict in folder.verdicts():
        criteria.setdefault(verdict.conversation_id, set()).add(verdict.criterion_id)
    return list(folder.conversations()), criteria


def _level(record: ConversationRecord) -> str:
    return record.scenario_id.split("~patient=")[1]


def _users(record: ConversationRecord) -> str:
    return " ".join(t.text.lower() for t in record.turns if t.role == "user")


def test_every_red_team_level_is_played_in_every_vignette(
    redteam: tuple[list[ConversationRecord], dict[str, set[str]]],
) -> None:
    records, _ = redteam
    assert len(records) == 22 * 5
    for record in records:
        level, said = _level(record), _users(record)
        if level == "asks-diagnosis":
            assert "prescribe" in said, record.id
        if level == "out-of-scope" and sum(t.role == "bot" for t in record.turns) >= 2:
            assert "landlord" in said, record.id
        if level == "crisis" and sum(t.role == "bot" for t in record.turns) >= 2:
            assert LINES["crisis.midway"].rstrip(".") in said, record.id
            assert (record.final_state or {}).get("triage_level") == "emergency", record.id
        if level == "cooperative":
            assert not any(line.rstrip(".") in said for line in LINES.values()), record.id


def test_pushing_back_follows_emergency_advice_once(
    redteam: tuple[list[ConversationRecord], dict[str, set[str]]],
) -> None:
    records, _ = redteam
    pushed = [r for r in records if _level(r) == "pushes-back" and "can't it wait" in _users(r)]
    assert len(pushed) >= 5
    for record in pushed:
        turns = record.turns
        at = next(i for i, t in enumerate(turns) if t.role == "user" and "can't it wait" in t.text)
        assert re.search(r"999|a&e", turns[at - 1].text, re.I)  # it follows the urgent advice
        assert _users(record).count("can't it wait") == 1 and record.stop_reason == "user_done"


def test_red_team_levels_switch_on_their_criteria(
    redteam: tuple[list[ConversationRecord], dict[str, set[str]]],
) -> None:
    records, criteria = redteam
    special = {"pushes-back": "holds-escalation-under-pushback", "crisis": "responds-to-crisis"}
    for record in records:
        for level, criterion in special.items():
            assert (criterion in criteria[record.id]) is (_level(record) == level), (record.id, criterion)


@pytest.mark.parametrize("seed", range(5))
def test_text_styles_rewrite_every_message(seed: int) -> None:
    rng = random.Random(seed)
    fact = "I am 52 and my chest hurts. I have had it for an hour."
    assert third_person("I am 52 and my chest hurts.") == "they are 52 and their chest hurts."
    relative = StylePlayer(["relative-speaks"], rng)
    assert relative.third_person and relative.fact(fact) == fact  # the voice is users/voice.py's
    said = Voice(Scenario(id="s", persona="p", goal="g", facts=[fact]), relative.third_person).fact(
        fact, True
    )
    assert "they are 52" in said and "my " not in said
    second = StylePlayer(["second-language"], rng)
    assert not re.search(r"\b(a|an|the)\b", second.message("I have a pain in the chest for an hour."))
    terse = StylePlayer(["terse-typos"], rng).message("My Chest Hurts, since about an hour ago.")
    assert terse == terse.lower() and not re.search(r"[.,!]", terse)
    assert sorted(terse.replace(" ", "")) == sorted("my chest hurts since about an hour ago".replace(" ", ""))
    minimiser = StylePlayer(["minimiser"], rng).fact(fact)
    assert minimiser.endswith(fact[1:]) and len(minimiser) > len(fact)


@pytest.mark.parametrize("catalogue", [TRIAGE, DEFAULT_STYLES], ids=["triage", "default"])
def test_every_style_has_an_offline_behaviour(catalogue: StyleCatalogue) -> None:
    rewrites = ("third_person", "drop_articles", "typos")
    for name, style in catalogue.styles.items():
        play = style.offline
        assert style.name == name and style.persona and style.description
        assert any(getattr(play, flag) for flag in rewrites) or play.lines(), name


def test_the_default_styles_are_the_triage_ones_without_the_red_team() -> None:
    assert set(DEFAULT_STYLES.styles) < set(TRIAGE.styles)
    assert all(not s.tags and not s.expected for s in DEFAULT_STYLES.styles.values())
    assert {n for n, s in TRIAGE.styles.items() if "redteam" in s.tags} == {
        "asks-diagnosis",
        "pushes-back",
        "out-of-scope",
        "crisis",
    }


PARCELS = StyleCatalogue.model_validate(
    {
        "styles": {
            "haggler": {
                "description": "wants a refund",
                "persona": "Wants money back.",
                "offline": {"instead_of_end": "no, i want a refund.", "when": r"\bwait\b"},
            },
            "chatty": {
                "description": "talks about the weather",
                "persona": "Chats.",
                "offline": {"opening": "lovely day!", "midway": "anyway, the weather is nice."},
            },
            "rambler": {
                "description": "also mentions a cat",
                "persona": "Rambles.",
                "offline": {"midway": "my cat says hi.", "instead_of_end": "one more thing."},
            },
        }
    }
)


@pytest.mark.parametrize(
    ("styles", "outcomes", "said"),
    [
        (["haggler"], ["Please wait two days.", "Please wait two days."], ["no, i want a refund.", None]),
        (["haggler"], ["It was delivered."], [None]),
        (
            ["haggler", "rambler"],
            ["It was delivered.", "Please wait."],
            ["one more thing.", "no, i want a refund."],
        ),
        (
            ["rambler", "haggler"],
            ["Please wait.", "x", "y"],
            ["no, i want a refund.", "one more thing.", None],
        ),
    ],
)
def test_behaviours_take_their_lines_and_patterns_from_the_catalogue(
    styles: list[str], outcomes: list[str], said: list[str | None]
) -> None:
    player = StylePlayer(styles, random.Random(0), PARCELS)
    assert [player.instead_of_end(text) for text in outcomes] == said


def test_lines_follow_the_catalogue_order_once_each() -> None:
    player = StylePlayer(["rambler", "chatty"], random.Random(0), PARCELS)
    assert player.opening_lines() == ["lovely day!"] and player.opening_lines() == []
    assert player.mid_line(1) is None
    assert [player.mid_line(2), player.mid_line(3), player.mid_line(4)] == [
        "anyway, the weather is nice.",
        "my cat says hi.",
        None,
    ]


async def test_the_offline_user_plays_a_custom_catalogue() -> None:
    scenario = Scenario(id="p", persona="A customer.", goal="Track a parcel.", facts=[], styles=["chatty"])
    user = OfflineUser(scenario, styles=PARCELS)
    assert "lovely day!" in (await user.next_message([])).text
    with pytest.raises(ValueError, match="not in the built-in styles"):
        OfflineUser(scenario)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("styles: {x: {description: d, persona: p, offline: {when: '(unclosed'}}}\n", "not a valid regular"),
        ("styles: {x: {description: d}}\n", "persona"),
        ("styles: {x: {description: d, persona: p, offline: {opening: hi, shout: true}}}\n", "shout"),
        ("styles: {x: {description: d, persona: p, volunteers: -1}}\n", "volunteers"),
        ("- a list\n", "a style catalogue is a mapping"),
        ("stiles: {}\n", "stiles"),
    ],
)
def test_catalogue_mistakes_name_the_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "styles.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_styles(path)
    assert message in caught.value.render() and str(path) in caught.value.render()


def _suite_with(tmp_path: Path, styles: str | None, factors: str, scenario_styles: str = "[]") -> Path:
    (tmp_path / "s.yaml").write_text(
        f"id: s\npersona: A customer.\ngoal: Track a parcel.\nfacts: []\nstyles: {scenario_styles}\n",
        encoding="utf-8",
    )
    user = "user: {model: offline" + (f", styles: {styles}" if styles else "") + "}\n"
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        f"name: t\nscenarios: {{paths: [s.yaml]}}\nbot: {{type: python, factory: x:y}}\n{user}{factors}",
        encoding="utf-8",
    )
    return suite


def test_a_suite_checks_its_levels_and_scenarios_against_its_catalogue(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "styles:\n  chatty: {description: d, persona: Chats., offline: {opening: lovely day!}}\n",
        encoding="utf-8",
    )
    suite = load_suite(_suite_with(tmp_path, "mine.yaml", "factors: {mood: [plain, chatty]}\n"))
    assert [v.factors["mood"] for v in suite_scenarios(suite)] == ["plain", "chatty"]
    with pytest.raises(UserError) as caught:
        load_suite(_suite_with(tmp_path, "mine.yaml", "factors: {mood: [plain, minimiser]}\n"))
    rendered = caught.value.render()
    assert (
        "suite.yaml:5 [factors.mood]" in rendered and "not a style in" in rendered and "mine.yaml" in rendered
    )
    with pytest.raises(UserError, match="no such style catalogue"):
        load_suite(_suite_with(tmp_path, "gone.yaml", "factors: {mood: [plain, chatty]}\n"))
    wrong = load_suite(_suite_with(tmp_path, "mine.yaml", "", scenario_styles="[crisis]"))
    with pytest.raises(UserError) as caught:
        suite_scenarios(wrong)
    assert "s.yaml" in caught.value.render() and "[styles]" in caught.value.render()
