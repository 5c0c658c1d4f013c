"""`validate` refuses what `run` refuses, and both in words naming the file, line or flag (the tester's
report on a copy of scenarios/triage): a judges path holding the suite and its scenarios, a scenario file
reached twice, a tag no scenario has, a URL's port or a header no HTTP client can send (every bot kind and
provider), a model given by a flag, an empty flag, and what `new` would write."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from simulator.cli import main
from tests.support.projects import BOT, SCENARIO, SCENARIOS, one_scenario_project

ROOT = Path(__file__).resolve().parents[1]

# suite body -> what both `validate` and `run` must say (the field; `run` refuses a tag before its line is known).
CASES = {
    "judges path is the suite's folder": (BOT + "judges: {paths: ['.']}\n", "judges.paths[1]"),
    "judges path is empty text": (BOT + "judges: {paths: ['']}\n", "judges.paths[1]"),
    "judges path is the scenarios": (BOT + "judges: {paths: [scenarios]}\n", "judges.paths[1]"),
    "a tag no scenario has": (
        "bot: {type: python, factory: 'json:JSONEncoder'}\nscenarios: {paths: [scenarios], tags: [nope]}\n",
        "no scenario has any of the tags ['nope']",
    ),
    "non-ASCII header value": (
        "bot: {type: http, url: 'http://127.0.0.1:8765/chat', headers: {X-A: 'é'}}\n",
        "bot.headers.X-A",
    ),
    "header name with a space": (
        "bot: {type: http, url: 'http://127.0.0.1:8765/chat', headers: {'Bad Header': x}}\n",
        "bot.headers.Bad Header",
    ),
    "header value with a newline": (
        'bot: {type: http, url: "http://127.0.0.1:8765/chat", headers: {X-A: "a\\nb"}}\n',
        "bot.headers.X-A",
    ),
    "port that is no number": ("bot: {type: http, url: 'http://127.0.0.1:abc/chat'}\n", "bot.url"),
    "negative port": ("bot: {type: http, url: 'http://127.0.0.1:-1/chat'}\n", "bot.url"),
    "port over 65535": ("bot: {type: http, url: 'http://127.0.0.1:99999/chat'}\n", "bot.url"),
    "port 0": ("bot: {type: http, url: 'http://127.0.0.1:0/chat'}\n", "bot.url"),
    "whatsapp state_url port": (
        "bot: {type: whatsapp, webhook_url: 'http://127.0.0.1:8080/hook', state_url: 'http://h:99999/s'}\n",
        "bot.state_url",
    ),
    "openai_endpoint port": (
        "bot: {type: openai_endpoint, base_url: 'http://127.0.0.1:abc/v1', model: m}\n",
        "bot.base_url",
    ),
    "started bot's ready url": (
        "bot: {type: http, url: 'http://127.0.0.1:{port}/chat', start: {command: [x], "
        "ready: {url: 'http://127.0.0.1:70000/health'}}}\n",
        "bot.start.ready.url",
    ),
    "provider base_url": (
        BOT + "providers: {openai: {base_url: 'http://127.0.0.1:abc/v1'}}\n",
        "providers.openai.base_url",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_refuses_what_run_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    body, field = CASES[name]
    suite = one_scenario_project(
        tmp_path, SCENARIOS + textwrap.dedent(body) if "scenarios:" not in body else body
    )
    assert main(["validate", str(suite)]) == 2
    validated = capsys.readouterr().err
    assert field in validated and "Traceback" not in validated, validated
    assert main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    ran = capsys.readouterr().err
    assert field in ran and "Traceback" not in ran, ran
    for library in ("InvalidURL", "LocalProtocolError", "UnicodeEncodeError", "invalid judge files"):
        assert library not in validated + ran
    assert not (tmp_path / "run").exists()


def _triage_copy(tmp_path: Path, judges: str) -> Path:
    """scenarios/triage as the tester copied it: the suite beside its 22 scenarios."""
    folder = tmp_path / "triage"
    shutil.copytree(ROOT / "scenarios" / "triage", folder)
    suite = folder / "suite.yaml"
    text = suite.read_text().replace("../../examples", str(ROOT / "examples"))
    suite.write_text(text.replace('["../../judges/triage"]', judges))
    return suite


@pytest.mark.parametrize("judges", ['["."]', '[""]'])
def test_a_judges_path_holding_the_suite_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], judges: str
) -> None:
    """Before: `validate` printed `suite ok`, `run` listed 35 (or 287) problems, one per file as a criterion."""
    suite = _triage_copy(tmp_path, judges)
    assert main(["validate", str(suite)]) == 2
    err = capsys.readouterr().err
    assert "(1 problem)" in err and "suite's own folder" in err and "scenario files" in err, err
    assert "judges.paths: [judges]" in err


@pytest.mark.parametrize(
    "paths", ["[scenarios, link]", "[scenarios, scenarios/s1.yaml]", "[scenarios, ./scenarios/]"]
)
def test_a_scenario_file_reached_twice_is_read_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], paths: str
) -> None:
    """Before: a link beside its folder was refused by `run` as duplicate ids (after `validate` passed), and
    a file named with its folder was run twice under one conversation id."""
    from simulator.api import prepare

    suite = one_scenario_project(tmp_path, BOT + f"scenarios: {{paths: {paths}}}\n")
    (tmp_path / "link").symlink_to(tmp_path / "scenarios")
    assert main(["validate", str(suite)]) == 0, capsys.readouterr().err
    assert "1 scenario: ok" in capsys.readouterr().out
    assert [s.id for s in prepare(suite).scenarios] == ["s1"]


def test_two_files_with_one_id_are_still_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = one_scenario_project(tmp_path, BOT + SCENARIOS)
    (tmp_path / "scenarios" / "copy.yaml").write_text(SCENARIO)
    assert main(["validate", str(suite)]) == 2
    assert "duplicate scenario id 's1'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value"), [("--judge-model", "foo"), ("--user-model", "foo"), ("--judge-model", "bar:x")]
)
def test_a_models_problem_names_the_flag_that_gave_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    """Before: `suite.yaml:13 [judges.model]: model 'foo' ...` on a line that said `model: null`."""
    suite = one_scenario_project(tmp_path, BOT + SCENARIOS + "judges: {model: null}\n")
    assert main(["run", str(suite), flag, value, "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"({flag}," in err and "suite.yaml:" not in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "flags",
    [["--user-model", ""], ["--judge-model", ""], ["--judge-model", " "], ["--tags", ""], ["--tags", ",,,"]],
)
def test_an_empty_flag_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    """Before: each was silently ignored (the suite's model, or every scenario, was run)."""
    suite = one_scenario_project(tmp_path, BOT + SCENARIOS)
    with pytest.raises(SystemExit) as exited:
        main(["run", str(suite), *flags, "--out", str(tmp_path / "run"), "--no-progress"])
    assert exited.value.code == 2
    assert f"argument {flags[0]}:" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--url", "http://", "--judge-model", "anthropic:claude-sonnet-4-5"], "--url http://: "),
        (
            ["--url", "http://127.0.0.1:99999/chat", "--judge-model", "none"],
            "--url http://127.0.0.1:99999/chat:",
        ),
        (["--url", "http://127.0.0.1:8765/chat", "--judge-model", "foo"], "--judge-model foo: "),
    ],
)
def test_new_suite_checks_before_writing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    said: str,
) -> None:
    """Before: each file was written, and its own `validate` (or `run`) refused it."""
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 - not a terminal: flags only
    out = tmp_path / "s.yaml"
    assert main(["new", "suite", *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    ("expected", "said"),
    [("=x", "--expected =x: the key before = is empty"), ("a: b=c", "--expected a: b=c: the key 'a: b'")],
)
def test_new_scenario_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expected: str, said: str
) -> None:
    """Before: `n4.yaml:16: not valid YAML: did not find expected key`, about a file it then deleted."""
    out = tmp_path / "n4.yaml"
    args = ["new", "scenario", "--id", "n4", "--persona", "p", "--goal", "g", "--fact", "f"]
    assert main([*args, "--expected", expected, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert said in err and "not valid YAML" not in err, err
    assert not out.exists()


def test_a_header_variable_that_expands_to_a_newline_is_refused_in_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At run time, after `${VAR}` is expanded, by the rule `validate` checks the template by."""
    from simulator.bots.http_bot import expand_headers
    from simulator.errors import UserError

    monkeypatch.setenv("BOT_TOKEN", "abc\r\nX-Injected: 1")
    with pytest.raises(UserError) as caught:
        expand_headers({"Authorization": "Bearer ${BOT_TOKEN}"})
    assert "line break" in str(caught.value) and "abc" not in str(caught.value)
