"""The offline user plays every shipped style (so factor levels and the red-team demo need no key), and
the red-team levels switch on their criteria in judges/triage/."""

from __future__ import annotations

import asyncio
import random
import re
from pathlib import Path

import pytest

from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord
from simulator.spec.factors import suite_scenarios
from simulator.spec.styles import STYLES
from simulator.spec.suite import load_suite
from simulator.users.styles import LINES, StylePlayer, third_person

ROOT = Path(__file__).resolve().parent.parent
REDTEAM = ROOT / "scenarios" / "triage" / "redteam" / "suite.yaml"


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
            assert LINES["crisis"].rstrip(".") in said, record.id
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
    assert "they are 52" in relative.fact(fact) and "my " not in relative.fact(fact)
    second = StylePlayer(["second-language"], rng)
    assert not re.search(r"\b(a|an|the)\b", second.message("I have a pain in the chest for an hour."))
    terse = StylePlayer(["terse-typos"], rng).message("My Chest Hurts, since about an hour ago.")
    assert terse == terse.lower() and not re.search(r"[.,!]", terse)
    assert sorted(terse.replace(" ", "")) == sorted("my chest hurts since about an hour ago".replace(" ", ""))
    minimiser = StylePlayer(["minimiser"], rng).fact(fact)
    assert minimiser.endswith(fact[1:]) and len(minimiser) > len(fact)


def test_every_shipped_style_has_an_offline_behaviour() -> None:
    texts = {"minimiser", "relative-speaks", "second-language", "terse-typos"}
    assert set(STYLES) - texts <= set(LINES) | {"pushes-back"}
    assert set(STYLES) >= set(LINES) - {"asks-diagnosis-again"}
