"""`validate` catches what `run` refuses, with the file, line and field (issue 30, items 12, 14 and 15):
an unimportable factory, a URL without a host, an unknown provider for any role, a binary prompt file, a
vocabulary that is binary or an alias bomb, an expected level the suite does not declare, a boolean in
quotes, a jury of no one or two judge settings, a duplicated golden CSV column."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from tests.support.projects import SCENARIO, SCENARIOS, one_scenario_project

OUTCOME = "outcome: {key: triage_level, levels: [self_care, gp, emergency]}\n"

CASES = {
    "unimportable factory": ("bot: {type: python, factory: 'no_such_module_xyz:make'}\n", "bot.factory"),
    "factory without attribute": ("bot: {type: python, factory: 'json:no_such_factory'}\n", "bot.factory"),
    "url without host": ("bot: {type: http, url: 'http://'}\n", "bot.url"),
    "url with only a path": ("bot: {type: http, url: 'http:///chat'}\n", "bot.url"),
    "chat provider": ("bot: {type: chat, model: 'foo:bar', system_prompt: hi}\n", "bot.model"),
    "user provider": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\nuser: {model: 'foo:bar'}\n",
        "user.model",
    ),
    "juror provider": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\njudges: {models: ['anthropic:x', 'foo:bar']}\n",
        "judges.models[2]",
    ),
    "judge auto": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\njudges: {model: auto}\n",
        "judges.model",
    ),
    "empty jury": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\njudges: {models: []}\n",
        "judges.models",
    ),
    "model and models": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\njudges: {model: 'anthropic:a', models: ['openai:b']}\n",
        "judges.model",
    ),
    "binary prompt": (
        "bot: {type: chat, model: 'test:x', system_prompt_file: prompt.md}\n",
        "system_prompt_file",
    ),
    "binary vocabulary": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\nuser: {model: offline, vocabulary: vocab.yaml}\n",
        "user.vocabulary",
    ),
    "alias-bomb vocabulary": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\nuser: {model: offline, vocabulary: bomb.yaml}\n",
        "user.vocabulary",
    ),
    "level not declared": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\n" + OUTCOME,
        "expected.triage_level",
    ),
    "boolean in quotes": ("bot: {type: python, factory: 'json:JSONEncoder'}\n", "expected.urgent"),
    "key a chat bot never sets": (
        "bot: {type: chat, model: 'test:x', system_prompt: hi, decision_tool: {field: level}}\n",
        "expected.triage_level",
    ),
    "key a chat bot without a decision tool never sets": (
        "bot: {type: chat, model: 'test:x', system_prompt: hi}\n",
        "expected.triage_level",
    ),
    "openai_endpoint url without host": (
        "bot: {type: openai_endpoint, base_url: 'http://', model: m}\n",
        "bot.base_url",
    ),
    "whatsapp url without host": ("bot: {type: whatsapp, webhook_url: 'https:///hook'}\n", "bot.webhook_url"),
}


def _suite(tmp_path: Path, name: str) -> Path:
    body, _ = CASES[name]
    (tmp_path / "prompt.md").write_bytes(b"You are a bot.\x00\x01\x02\xff")
    (tmp_path / "vocab.yaml").write_bytes(b"\x00\x00binary")
    big = "x" * 400_000
    (tmp_path / "bomb.yaml").write_text(f"a: &a '{big}'\nb: [" + ", ".join(["*a"] * 40) + "]\n")
    scenario = SCENARIO
    if name == "level not declared":
        scenario = scenario.replace("gp}", "urgent_care}")
    if name == "boolean in quotes":
        scenario = scenario.replace("gp}", "gp, urgent: 'false'}")
    suite = one_scenario_project(tmp_path, SCENARIOS + textwrap.dedent(body), scenario)
    return suite


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_refuses_what_run_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    suite = _suite(tmp_path, name)
    field = CASES[name][1]
    assert main(["validate", str(suite)]) == 2
    validated = capsys.readouterr().err
    assert field in validated and "Traceback" not in validated, validated
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    ran = capsys.readouterr().err
    assert field in ran and "Traceback" not in ran, ran
    assert not (tmp_path / "run").exists()  # refused before a run folder was made


@pytest.mark.parametrize("header", ["item_id,message,item_id", "item_id,message,message,expected_intent"])
def test_a_duplicate_golden_csv_column_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str
) -> None:
    path = tmp_path / "golden.csv"
    cells = ",".join(["a"] * len(header.split(",")))
    path.write_text(f"{header}\n{cells}\n")
    assert main(["validate", str(path)]) == 2
    assert "appears 2 times" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["unimportable factory", "url without host", "chat provider", "empty jury"])
def test_the_python_api_refuses_what_validate_refuses(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`simulator.run(SUITE)` (the command line's own path) refuses the same suites, before a run folder."""
    import simulator
    from simulator.errors import UserError

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    suite = _suite(tmp_path, name)
    with pytest.raises(UserError) as caught:
        simulator.run(suite, out=tmp_path / "run")
    fields = [p.field or "" for p in caught.value.problems] + [str(caught.value)]
    assert any(CASES[name][1] in f for f in fields), fields
    assert not (tmp_path / "run").exists()
