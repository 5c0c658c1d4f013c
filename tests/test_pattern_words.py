"""A value that does not match a field's pattern is refused in words, never with the regular expression:
`scenarios/s1.yaml:1 [id]: String should match pattern '^[^\\s#]+$'` told a domain expert nothing. Every
pattern of every model has its words (errors.PATTERN_WORDS); the files, the Python API and the desk say them.
Also here: YAML's tags for values no file means (`!!set`, `!!binary` ...) are refused where written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.cli import main
from simulator.errors import PATTERN_WORDS, UserError
from tests.support.projects import (
    BOT,
    CRITERION,
    SCENARIO,
    SCENARIOS,
    every_strict_model,
    one_scenario_project,
)


def _patterns(schema: Any) -> set[str]:
    if isinstance(schema, list | tuple):
        return {p for item in schema for p in _patterns(item)}
    if not isinstance(schema, dict):
        return set()
    found = (
        {schema["pattern"]}
        if schema.get("type") == "str" and isinstance(schema.get("pattern"), str)
        else set()
    )
    for key, value in schema.items():
        if key not in ("serialization", "metadata"):
            found |= _patterns(value)
    return found


def test_every_pattern_of_every_model_has_its_words() -> None:
    used: set[str] = set()
    for cls in every_strict_model():
        cls.model_rebuild(force=True)
        used |= _patterns(cls.__pydantic_core_schema__)
    assert len(used) > 10  # the walk found the package's patterns
    assert sorted(used - set(PATTERN_WORDS)) == []  # a pattern a person would see as a regex
    assert sorted(set(PATTERN_WORDS) - used) == []  # words for a pattern no field has any more


# For each pattern: a value its words allow and one they refuse; the pattern must agree with the words.
EXAMPLES = {
    r"^(sha256:)?[0-9a-f]{64}$": ("sha256:" + "ab" * 32, "AB" * 32),
    r"^LLM(0[1-9]|10)$": ("LLM10", "LLM11"),
    r"^[A-Z]{2}$": ("GB", "gb"),
    r"^[A-Za-z0-9][A-Za-z0-9_-]*$": ("a-1_b", "-a"),
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,59}$": ("v1.2", "x" * 61),
    r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$": ("H-1.2", "H 1"),
    r"^[\w+-]+$": ("en-us+klatt2", "en us"),
    r"^[\w.-]+$": ("asks.age-1", "asks age"),
    r"^[\w.-]+:.+$": ("openai:gpt-4.1-mini", "gpt-4.1-mini"),
    r"^[\w.:-]+$": ("claim:refund", "claim refund"),
    r"^[\w.]+:[\w.]+$": ("my_bot:make_bot", "my_bot.make_bot"),
    r"^[^.]+\.[^.]+(\.[^.]+)*$": ("book_appointment.urgency", "book_appointment"),
    r"^[^\s#/\\\x00-\x1f\x7f-\x9f\xad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]+$": (
        "chest-pain-01_café?",
        "chest\u200bpain",
    ),
    r"^[a-z0-9][a-z0-9_-]*$": ("role-play", "Role-play"),
    r"^[a-z][a-z0-9_-]*$": ("omission", "1omission"),
    r"^\d+$": ("15550783881", "+15550783881"),
    r"^https?://": ("https://bot.example", "ftp://bot.example"),
    r"^wss?://": ("wss://bot.example", "https://bot.example"),
}


@pytest.mark.parametrize("pattern", sorted(PATTERN_WORDS))
def test_the_words_agree_with_the_pattern_on_an_example(pattern: str) -> None:
    allowed, refused = EXAMPLES[pattern]
    assert re.search(pattern, allowed) and not re.search(pattern, refused)


# (suite body, scenario, criterion, the file and field named, the words expected)
CASES: dict[str, tuple[str, str, str | None, str, str]] = {
    "scenario id with a space": (SCENARIOS + BOT, SCENARIO.replace("id: s1", "id: 's 1'"), None,
                                 "s1.yaml:1 [id]", "one word: no spaces"),
    "scenario id with a slash": (SCENARIOS + BOT, SCENARIO.replace("id: s1", "id: 'a/../s1'"), None,
                                 "s1.yaml:1 [id]", "one word: no spaces, no '#', no '/'"),
    "scenario id with a backslash": (SCENARIOS + BOT, SCENARIO.replace("id: s1", "id: 'a\\s1'"), None,
                                     "s1.yaml:1 [id]", "one word: no spaces, no '#', no '/' or '\\', and no control or invisible characters"),
    "scenario id with an escape": (SCENARIOS + BOT, SCENARIO.replace("id: s1", 'id: "\\e[31mred"'), None,
                                   "s1.yaml:1 [id]", "one word: no spaces, no '#', no '/' or '\\', and no control or invisible characters"),
    "scenario id with a C1 control": (SCENARIOS + BOT, SCENARIO.replace("id: s1", 'id: "s\\x9b1"'), None,
                                      "s1.yaml:1 [id]", "one word: no spaces, no '#', no '/' or '\\', and no control or invisible characters"),
    "scenario id with a zero-width space": (SCENARIOS + BOT, SCENARIO.replace("id: s1", 'id: "s\\u200b1"'),
                                            None, "s1.yaml:1 [id]", "one word: no spaces, no '#'"),
    "scenario id with a bidi override": (SCENARIOS + BOT, SCENARIO.replace("id: s1", 'id: "s\\u202e1"'),
                                         None, "s1.yaml:1 [id]", "one word: no spaces, no '#'"),
    "scenario id with a soft hyphen": (SCENARIOS + BOT, SCENARIO.replace("id: s1", 'id: "s\\xad1"'),
                                       None, "s1.yaml:1 [id]", "one word: no spaces, no '#'"),
    "criterion id with a space": (SCENARIOS + BOT, SCENARIO, CRITERION.replace("id: c1", "id: 'c 1'"),
                                  "c1.yaml:1 [id]", "letters, digits, '_', '.' and '-', no spaces"),
    "criterion category in capitals": (SCENARIOS + BOT, SCENARIO, CRITERION + "category: Omission\n",
                                       "c1.yaml:5 [category]", "lowercase letters"),
    "python factory with a dot": (SCENARIOS + "bot: {type: python, factory: 'json.dumps'}\n", SCENARIO, None,
                                  "suite.yaml:2 [bot.factory]", "a module and a name in it"),
    "http url of ftp": (SCENARIOS + "bot: {type: http, url: 'ftp://bot.example/chat'}\n", SCENARIO, None,
                        "suite.yaml:2 [bot.url]", "a URL starting with http:// or https://"),
    "chat model without provider": (SCENARIOS + "bot: {type: chat, model: gpt-4, system_prompt: hi}\n",
                                    SCENARIO, None, "suite.yaml:2 [bot.model]", "a provider and a model"),
    "whatsapp country in lowercase": (
        SCENARIOS + "bot: {type: whatsapp, webhook_url: 'http://127.0.0.1:9/hook', country: gb}\n", SCENARIO,
        None, "suite.yaml:2 [bot.country]", "a two-letter country code in capitals"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_off_its_pattern_is_refused_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    suite, scenario, criterion, where, words = CASES[name]
    path = one_scenario_project(tmp_path, suite, scenario, criterion)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert where in err and f"should be {words}" in err, err
    assert "should match pattern" not in err and "^" not in err, err


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: simulator.Scenario(id="chest pain", persona="p", goal="g"), "one word: no spaces"),
        (
            lambda: simulator.run(
                simulator.Suite(bot={"type": "python", "factory": "json:JSONEncoder"}),
                scenarios=[{"id": "chest pain", "persona": "p", "goal": "g"}],
            ),
            "one word: no spaces",
        ),
        (
            lambda: simulator.run(simulator.Suite(bot={"type": "python", "factory": "json.dumps"}), runs=1),
            "a module and a name in it",
        ),
    ],
)
def test_the_python_api_says_the_pattern_in_words(build: Any, words: str) -> None:
    with pytest.raises(UserError) as caught:
        build()
    assert f"should be {words}" in str(caught.value) and "should match pattern" not in str(caught.value)


def test_a_scenario_id_over_200_characters_is_refused_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1,000,000-character id was taken, and named its file, its conversations and the desk's addresses."""
    for length in (201, 1_000_000):
        (tmp_path / str(length)).mkdir()
        path = one_scenario_project(
            tmp_path / str(length), SCENARIOS + BOT, SCENARIO.replace("s1", "x" * length)
        )
        assert main(["validate", str(path)]) == 2
        err = capsys.readouterr().err
        assert "s1.yaml:1 [id]" in err and "at most 200 characters" in err and len(err) < 2000, err[:500]


def test_a_golden_item_id_follows_the_scenario_ids_rule() -> None:
    """A golden item's id names its conversations (`id#repeat`) as a scenario's does: one rule."""
    from simulator.config.golden import GoldenItem

    item = {"intent": "i", "kind": "exact", "user_message": "u", "reference": "r"}
    assert GoldenItem.model_validate({**item, "item_id": "faq-01"}).id == "faq-01"
    for refused in ("faq/01", "faq\x1b01", "f" * 201):
        with pytest.raises(ValueError, match=r"string_pattern_mismatch|string_too_long"):
            GoldenItem.model_validate({**item, "item_id": refused})


TAGS = {
    "a set": ("facts: !!set {a, b}\n", "!!set has no order", "write a list"),
    "binary text": ("goal2: !!binary aGVsbG8=\n", "!!binary", "write the text itself"),
    "an ordered map": ("extra: !!omap [{a: 1}]\n", "!!omap", "write a mapping"),
    "pairs": ("extra: !!pairs [{a: 1}]\n", "!!pairs", "write a mapping or a list"),
}


@pytest.mark.parametrize("name", sorted(TAGS))
def test_a_yaml_tag_no_file_means_is_refused_where_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """`facts: !!set {a, b}` was taken as a list in no particular order; `!!binary` as text."""
    line, said, fix = TAGS[name]
    path = one_scenario_project(tmp_path, SCENARIOS + BOT, "id: s1\npersona: p\ngoal: g\n" + line)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "s1.yaml:4" in err and said in err and fix in err and "Traceback" not in err, err
