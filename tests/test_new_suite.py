"""`simulator new suite` (issue 31, item 17): a commented suite for an HTTP bot, the judge model asked for,
a judge and a simulated user of different families suggested; it passes `validate`, never overwrites."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.commands.new_suite import SUGGESTED_JUDGE, SUGGESTED_USER, suggested_user
from simulator.config.suite import load_suite
from simulator.judging.hygiene import model_family

URL = "http://127.0.0.1:8765/chat"


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["validate", str(path)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("judge", "user"),
    [
        ("anthropic:claude-sonnet-4-5", "openai:gpt-4.1-mini"),
        ("openai:gpt-4.1", "anthropic:claude-haiku-4-5"),
        ("openai:o3", "anthropic:claude-haiku-4-5"),
        (None, SUGGESTED_USER),
        ("openai:llama-3.1-8b", SUGGESTED_USER),
    ],
)
def test_the_suggested_user_is_of_another_family(judge: str | None, user: str) -> None:
    assert suggested_user(judge) == user
    assert model_family(suggested_user(judge)) != model_family(judge)
    assert model_family(SUGGESTED_JUDGE) != model_family(SUGGESTED_USER)


def test_flags_write_a_commented_suite_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "my-bot" / "suite.yaml"
    argv = ["new", "suite", "--url", URL, "--judge-model", "anthropic:claude-sonnet-4-5", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "simulated user openai:gpt-4.1-mini" in printed and "simulator run" in printed
    text = out.read_text()
    assert text.count("\n#") + text.count("  #") >= 10  # commented
    suite = load_suite(out)
    assert (suite.bot.type, suite.bot.url) == ("http", URL)  # type: ignore[union-attr]
    assert suite.judges.model == "anthropic:claude-sonnet-4-5" and suite.user.model == "openai:gpt-4.1-mini"
    assert suite.name == "my-bot"
    assert (out.parent / "scenarios").is_dir() and (out.parent / "judges").is_dir()
    assert "suite" in _validate(out, capsys)
    # With a scenario and a criterion written by the other `new` commands, it still validates.
    scenario = out.parent / "scenarios" / "first.yaml"
    assert (
        main(["new", "scenario", "--id", "first", "--persona", "p", "--goal", "g", "--out", str(scenario)])
        == 0
    )
    criterion = out.parent / "judges" / "helpful.yaml"
    new_criterion = ["new", "criterion", "--id", "helpful", "--criterion", "c", "--pass", "p", "--fail", "f"]
    assert main([*new_criterion, "--not-applicable", "n", "--out", str(criterion)]) == 0
    checked = _validate(out, capsys)
    assert "1 scenario: ok" in checked and "1 criterion: ok" in checked


def test_it_never_overwrites_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "suite.yaml"
    out.write_text("name: mine\n")
    assert main(["new", "suite", "--url", URL, "--judge-model", "none", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "Traceback" not in err
    assert out.read_text() == "name: mine\n"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--judge-model", "none"], "missing --url"),
        (["--url", URL], f"--judge-model {SUGGESTED_JUDGE} --user-model {SUGGESTED_USER}"),
        (["--url", "127.0.0.1:8765/chat", "--judge-model", "none"], "starts with http:// or https://"),
    ],
)
def test_missing_or_bad_flags_are_one_clear_error(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "suite.yaml"
    assert main(["new", "suite", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1
    assert not out.exists()


def test_no_judge_is_written_as_null_with_a_word(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "suite.yaml"
    assert (
        main(
            [
                "new",
                "suite",
                "--url",
                URL,
                "--judge-model",
                "none",
                "--user-model",
                "offline",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "no judge: LLM criteria will be recorded as not judged" in capsys.readouterr().out
    data = yaml.safe_load(out.read_text())
    assert data["judges"]["model"] is None and data["user"]["model"] == "offline"
    assert "only code checks" in out.read_text()
    _validate(out, capsys)


def test_a_same_family_pair_is_warned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "suite.yaml"
    argv = [
        "new",
        "suite",
        "--url",
        URL,
        "--judge-model",
        "openai:gpt-4.1",
        "--user-model",
        "openai:gpt-4.1-mini",
    ]
    assert main([*argv, "--out", str(out)]) == 0
    assert "same family (gpt)" in capsys.readouterr().err


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """stdin as a terminal; `input` answers from the list (and records each prompt)."""
    answers: list[str] = []
    prompts: list[str] = []
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt)
        return answers.pop(0)

    monkeypatch.setattr(builtins, "input", fake_input)
    yield answers
    assert not answers  # every answer was asked for
    assert any(SUGGESTED_JUDGE in p for p in prompts)  # the judge's prompt shows the suggestion


def test_on_a_terminal_it_asks_and_suggests(
    terminal: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal += [URL, "", ""]  # the URL; the suggested judge; the suggested user of the other family
    out = tmp_path / "suite.yaml"
    assert main(["new", "suite", "--out", str(out)]) == 0
    suite = load_suite(out)
    assert suite.judges.model == SUGGESTED_JUDGE and suite.user.model == SUGGESTED_USER
    assert "suggested" in capsys.readouterr().out
