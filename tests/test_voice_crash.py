"""A phone bot that crashes or dies mid-call is a bot error, never a hang-up that gets judged: its handler
raising (close 1011), a close with 1011 and a reason, a reset connection (no close frame, 1006), the process
exiting and the process killed, on plain `websockets` (tests/bots/crashing_phone_bot.py, started by the
suite) and on pipecat (tests/bots/pipecat_crash_bot.py). A normal close (1000) after a goodbye stays a
hang-up."""

from __future__ import annotations

import importlib.util
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("websockets") is None and os.environ.get("SIMULATOR_REQUIRE_ALL") != "1":
    pytest.skip('needs the voice extra: pip install -e ".[voice]"', allow_module_level=True)

from simulator.bots.base import BotError
from simulator.voice.config import VoiceBotConfig
from tests.test_voice_call import _config, _talk

pytestmark = [pytest.mark.voice, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parent.parent


def _started(module: str, env: dict[str, str], **changes: Any) -> VoiceBotConfig:
    """A voice bot the suite starts: `python -m module --port {port}` from the repository root."""
    start = {
        "command": ["{python}", "-m", module, "--port", "{port}"],
        "cwd": str(ROOT),
        "env": env,
        "ready": {"port": "{port}", "timeout_s": 60},
    }
    return _config(
        "ws://127.0.0.1:{port}/ws", **{"greeting_s": 2.0, "timeout_s": 10.0, "start": start, **changes}
    )


def _websockets_bot(end: str, greet: bool = True) -> VoiceBotConfig:
    env = {"PHONE_BOT_END": end, "PHONE_BOT_GREET": "1" if greet else "0"}
    return _started("tests.bots.crashing_phone_bot", env)


@pytest.mark.parametrize(
    ("end", "greet", "says"),
    [
        ("raise", True, r"close code 1011 \(internal error"),
        ("raise", False, r"close code 1011 \(internal error"),  # before it said a word
        ("close1011", True, r"close code 1011 \(internal error.*reason 'pipeline crashed'"),
        ("reset", True, r"close code 1006 \(no close frame"),
        ("exit", True, r"exited with code 1 during the run(.|\n)*ending the call: exit"),
        ("exit", False, r"exited with code 1 during the run(.|\n)*ending the call: exit"),
        ("sigkill", True, r"was killed by SIGKILL \(exit code -9\)(.|\n)*ending the call: sigkill"),
    ],
)
async def test_a_phone_bot_that_crashes_mid_call_is_a_bot_error_not_a_hang_up(
    end: str, greet: bool, says: str, tmp_path: Path
) -> None:
    with pytest.raises(BotError, match=says) as caught:
        await _talk(_websockets_bot(end, greet), ["Hello?", "Is anyone there?"], tmp_path)
    assert caught.value.kind == "connection"
    assert "neither judged nor counted" in str(caught.value)  # the cause and what it means, in words


async def test_a_phone_bot_that_says_goodbye_and_closes_normally_hangs_up(tmp_path: Path) -> None:
    turns = await _talk(_websockets_bot("hangup"), ["Hello?", "Is anyone there?"], tmp_path)
    assert turns[-1].raw is not None and turns[-1].raw["end"] == "hangup"


SUITE = """\
    name: voice-crash
    scenarios: {{paths: [scenarios]}}
    bot:
      type: voice
      url: ws://127.0.0.1:{{port}}/ws
      caller: {{noise_dbfs: null, pause_s: 0.15, answer_delay_s: 0.1}}
      quiet_s: 0.4
      greeting_s: 2
      timeout_s: 10
      start:
        command: ["{{python}}", "-m", "tests.bots.crashing_phone_bot", "--port", "{{port}}"]
        cwd: {root}
        env: {{PHONE_BOT_END: {end}}}
        ready: {{port: "{{port}}", timeout_s: 60}}
    user: {{model: offline}}
    runs: 1
    """


@pytest.mark.parametrize("end", ["exit", "close1011"])
async def test_a_run_records_the_crashed_call_as_an_error_and_judges_nothing(
    end: str, tmp_path: Path
) -> None:
    import simulator
    from simulator.analysis.rundata import load_run

    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "chest.yaml").write_text(textwrap.dedent("""\
        id: chest
        persona: A man phoning about chest pain.
        goal: Find out what to do about chest pain.
        facts: [The pain spreads to my left arm.]
        assertions: {must_contain: ["nine nine nine"]}
        max_turns: 3
        """), encoding="utf-8")  # fmt: skip
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(SUITE.format(root=ROOT, end=end)), encoding="utf-8")
    await simulator.arun(tmp_path / "suite.yaml", out=tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    [conversation] = run.conversations
    assert conversation.stop_reason == "error", conversation.stop_reason
    assert conversation.error is not None and conversation.error.source == "bot"
    assert conversation.error.kind == "connection"
    assert (
        "exited with code 1" in conversation.error.message
        if end == "exit"
        else "1011" in conversation.error.message
    )
    verdicts = [v for v in run.verdicts if v.conversation_id == conversation.id]
    assert verdicts and all(v.result == "not_judged" for v in verdicts)  # nothing judged


@pytest.mark.pipecat
@pytest.mark.parametrize(
    ("end", "says"),
    [
        ("exit", r"exited with code 1 during the run(.|\n)*ending the call: exit"),
        ("raise", r"close code 10(11|06) \("),
    ],
)
async def test_a_pipecat_phone_bot_that_crashes_mid_call_is_a_bot_error(
    end: str, says: str, tmp_path: Path
) -> None:
    config = _started("tests.bots.pipecat_crash_bot", {"PHONE_BOT_END": end}, greeting_s=8.0)
    with pytest.raises(BotError, match=says) as caught:
        await _talk(config, ["Hello?", "Is anyone there?"], tmp_path)
    assert caught.value.kind == "connection"


@pytest.mark.pipecat
async def test_a_pipecat_phone_bot_that_ends_its_pipeline_hangs_up(tmp_path: Path) -> None:
    config = _started("tests.bots.pipecat_crash_bot", {"PHONE_BOT_END": "hangup"}, greeting_s=8.0)
    turns = await _talk(config, ["Hello?", "Is anyone there?"], tmp_path)
    assert turns[-1].raw is not None and turns[-1].raw["end"] == "hangup"
