"""The engine knows no domain: the triage demo's words live in its example files, and a second domain
(parcel support) runs offline with its own vocabulary, through the same engine and reports."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.config.loading import load_scenarios
from simulator.config.scenario import Scenario
from simulator.config.suite import load_suite
from simulator.config.vocabulary import Vocabulary, load_vocabulary
from simulator.engine.runner import RunOptions, run_suite
from simulator.errors import UserError
from simulator.record.folder import RunFolder
from simulator.report.model import build_report
from simulator.text.content import gives_outcome
from simulator.users.offline import OfflineUser
from tests.support.source import modules, parsed, source_text

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "simulator"
# Words of the triage demo that must not steer the engine's behaviour.
DOMAIN_WORDS = ("999", "a&e", "ambulance", "triage_level", "emergency", "gp")
DOMAIN_VALUES = ("high-stakes",)  # a tag value; the option that names it (--high-stakes-tag) is generic


def _literals(path: Path) -> list[tuple[int, str]]:
    """String literals of a module that are not docstrings."""
    tree = parsed(source_text(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_triage_word_steers_the_engine() -> None:
    found = []
    for path in modules():
        if path.parts[-2] == "testing" or path.name == "migrations.py":  # fake data; v1's own defaults
            continue
        for line, text in _literals(path):
            words = set(text.lower().replace(",", " ").split())
            hits = [w for w in DOMAIN_WORDS if w in words or (len(w) > 3 and w in text.lower())]
            hits += [v for v in DOMAIN_VALUES if text.strip().lower() == v]
            if hits:
                found.append(f"{path.relative_to(ROOT)}:{line}: {hits} in {text[:60]!r}")
    assert not found, "domain words in engine code (move them to a suite or example file):\n" + "\n".join(
        found
    )


def test_without_a_vocabulary_only_explicit_advice_is_an_outcome() -> None:
    assert not gives_outcome("Please call 999 now.")
    assert not gives_outcome("Your parcel status: delivered.")
    assert gives_outcome("I recommend you call the bank.")
    triage = load_vocabulary(ROOT / "examples" / "triage_vocabulary.yaml")
    assert gives_outcome("Please call 999 now.", triage)
    parcels = load_vocabulary(ROOT / "examples" / "parcel_vocabulary.yaml")
    assert gives_outcome("Your parcel status: delivered.", parcels)
    assert not gives_outcome("Your parcel status: delivered. Anything else?", parcels)


async def test_synonyms_come_from_the_vocabulary() -> None:
    scenario = Scenario(
        id="p", persona="A customer.", goal="Track a parcel.", facts=["The tracking number is KP-1."]
    )
    question = "What is your reference?"
    plain = OfflineUser(scenario, volunteer_share=0.0)
    await plain.next_message([])
    words = Vocabulary(synonyms={"tracking": ["reference"]})
    taught = OfflineUser(scenario, volunteer_share=0.0, vocabulary=words)
    await taught.next_message([])
    from datetime import UTC, datetime

    from simulator.record.transcript import Turn

    turns = [Turn(index=0, role="bot", messages=[question], started_at=datetime.now(UTC))]
    assert "kp-1" not in (await plain.next_message(turns)).text.lower()
    assert "KP-1" in (await taught.next_message(turns)).text


def test_a_parcel_suite_runs_offline_through_the_same_engine(tmp_path: Path) -> None:
    suite = load_suite(ROOT / "scenarios" / "parcels" / "suite.yaml")
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    result = asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "run", progress=False)))
    assert result.status == "complete" and result.finished == 9 and result.errors == 0
    records = {r.id: r for r in RunFolder.open(tmp_path / "run").conversations()}
    asked = records["parcel-where-is-it#1"]
    users = [t.text for t in asked.turns if t.role == "user"]
    assert any("ls1 4ab" in u.lower() for u in users)  # the postcode, given when the bot asked for it
    assert "ls1 4ab" not in users[0].lower()  # not before
    assert records["parcel-refund#0"].stop_reason == "handover"
    report = build_report(load_run(tmp_path / "run"))
    assert report.overall.k == 9 and report.overall.n == 9
    assert report.high_stakes_tag is None and not [f for f in report.findings if f.level == "bug"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("outcome_patterns: ['(unclosed']\n", "not a valid regular expression"),
        ("synonyms: {a: b}\n", "synonyms"),
        ("wrods: {}\n", "wrods"),
        ("- a list\n", "a vocabulary is a mapping"),
    ],
)
def test_vocabulary_mistakes_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "vocabulary.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_vocabulary(path)
    assert message in caught.value.render() and str(path) in caught.value.render()
