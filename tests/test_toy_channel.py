"""A channel added from outside the package (tests/support/toy_channel.py: its config, its adapter, one
`register_bot_kind` line) runs a suite end to end: validate, preflight, run, report, and its declared secrets
reach no file. From the command line the same module is found through its entry point."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import simulator
from simulator.config.bot_kinds import BOT_KINDS
from simulator.config.suite import load_suite
from simulator.engine.preflight import preflight_problems
from simulator.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "toy-url-token-5a4b3c"
KEY = "toy-key-0f9e8d7c6b"
ENDPOINT = f"https://toy.example/chat?token={TOKEN}"

SCENARIO = """
id: chest-1
persona: 52-year-old man, short messages, downplays symptoms.
goal: Find out whether he should go to the clinic tomorrow about chest discomfort.
facts:
  - Pressure in the chest for about two hours.
  - The pain goes to the left arm.
expected:
  triage_level: emergency
"""


@pytest.fixture
def toy() -> Iterator[None]:
    """The toy channel registered, as importing its module does; forgotten after the test."""
    importlib.import_module("tests.support.toy_channel")
    yield
    BOT_KINDS.unregister("toy")
    sys.modules.pop("tests.support.toy_channel", None)


def _suite(folder: Path, bot: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chest.yaml").write_text(textwrap.dedent(SCENARIO), encoding="utf-8")
    suite = folder / "suite.yaml"
    suite.write_text(
        f"name: toy\nbot: {bot}\nuser: {{model: offline}}\noutcome: {{key: triage_level, levels: [gp, emergency]}}\n",
        encoding="utf-8",
    )
    return suite


def _files_holding(folder: Path, *secrets: str) -> list[str]:
    return [
        f"{path.name}: {secret}"
        for path in folder.rglob("*")
        if path.is_file()
        for secret in secrets
        if secret in path.read_text(encoding="utf-8", errors="replace")
    ]


def test_a_toy_channel_runs_a_suite_end_to_end(
    toy: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_KEY", KEY)
    path = _suite(tmp_path / "suite", f'{{type: toy, endpoint: "{ENDPOINT}", key_env: TOY_KEY}}')
    suite = load_suite(path)
    assert suite.bot.describe() == "toy:toy.example"
    assert preflight_problems(suite) == []

    result = simulator.run(path, out=tmp_path / "run")
    assert result.report.run.bot == "toy:toy.example"
    [transcript] = result.conversations
    assert transcript.status == "pass" and transcript.final_state == {"triage_level": "emergency"}
    assert result.outcome is not None and result.outcome.exact.k == result.outcome.exact.n == 1
    echoed = transcript.turns[1].messages[0]  # the careless bot's debug line, recorded redacted
    assert "[redacted]" in echoed and KEY not in echoed and TOKEN not in echoed

    assert _files_holding(tmp_path / "run", KEY, TOKEN) == []
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["suite"]["bot"]["endpoint"] == "https://toy.example/chat?token=[redacted]"
    assert manifest["suite"]["bot"]["key_env"] == "TOY_KEY"  # the variable's name, never its value


def test_a_toy_channels_mistakes_are_named_like_a_built_in_kinds(toy: None, tmp_path: Path) -> None:
    misspelt = _suite(tmp_path / "a", '{type: toi, endpoint: "https://toy.example/"}')
    with pytest.raises(UserError) as caught:
        load_suite(misspelt)
    assert "[bot.type]: unknown bot type 'toi'; did you mean 'toy'?" in caught.value.render()

    unknown_key = _suite(tmp_path / "b", '{type: toy, endpoint: "https://toy.example/", levl: gp}')
    with pytest.raises(UserError) as caught:
        load_suite(unknown_key)
    assert "suite.yaml:2 [bot.levl]: unknown key 'levl'; did you mean 'level'?" in caught.value.render()

    # Its own preflight check runs, and the token in the URL is not echoed.
    no_host = load_suite(_suite(tmp_path / "c", f'{{type: toy, endpoint: "https://?token={TOKEN}"}}'))
    [problem] = preflight_problems(no_host)
    assert problem.field == "bot.endpoint" and "names no host" in problem.message
    assert TOKEN not in str(problem)


def test_a_channel_in_an_installed_package_is_found_by_its_entry_point(tmp_path: Path) -> None:
    """From the command line, the toy channel's module is named by an entry point (`simulator.bot_kinds`),
    as a package that adds a channel declares it: no registration in this process."""
    site = tmp_path / "site"
    info = site / "toy_channel-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-channel\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[simulator.bot_kinds]\ntoy = tests.support.toy_channel\n", encoding="utf-8"
    )
    path = _suite(tmp_path / "suite", f'{{type: toy, endpoint: "{ENDPOINT}"}}')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "TOY_KEY": KEY}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "simulator", *args], env=env, capture_output=True, text=True, cwd=tmp_path
        )

    ran = cli("run", str(path), "--out", str(tmp_path / "run"), "--no-progress")
    assert ran.returncode == 0, ran.stderr
    shown = cli("report", str(tmp_path / "run"))
    assert shown.returncode == 0, shown.stderr
    assert "bot toy:toy.example" in shown.stdout
    assert _files_holding(tmp_path / "run", KEY, TOKEN) == []
    assert KEY not in ran.stdout + ran.stderr + shown.stdout and TOKEN not in ran.stdout + shown.stdout
