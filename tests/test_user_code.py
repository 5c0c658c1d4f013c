"""Issue 43, class 3 (and class 4's tool `pattern`): code the user runs in this process (python bots,
environment tools) is held to what an HTTP bot is held to. Whatever it raises (BaseException, SystemExit,
KeyboardInterrupt) is that turn's or call's recorded error, never the run exiting; a state it makes cyclic,
too deep or too large is refused and put back; a reply past the byte cap or the turn's deadline is a bot
error; a parameter `pattern` that backtracks stops at the regex time limit."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from simulator.bots.base import BotError
from simulator.bots.environment import make_environment
from simulator.bots.python_bot import PythonSession
from simulator.bots.turn_limits import TurnLimits
from simulator.config.suite import load_suite

TOOLS = """
import sys, time

class Custom(BaseException):
    pass

def base(state):
    raise BaseException("not an Exception")

def custom(state):
    raise Custom("mine")

def exits(state):
    sys.exit(7)

def interrupt(state):
    raise KeyboardInterrupt

def cycle(state):
    state["me"] = state
    return "done"

def deep(state):
    value = "x"
    for _ in range(500):
        value = [value]
    state["deep"] = value
    return "done"

def huge_state(state):
    state["blob"] = "x" * 9_000_000
    return "done"

def huge_result(state):
    return list(range(10_000_000))

def cyclic_result(state):
    out = []
    out.append(out)
    return out

def echo(state, code):
    return code
"""

ENV = """
name: env
bot: {type: python, factory: nobody:make}
environment:
  state: {kept: true}
  tool_timeout_s: 5
  tools:
    base: {function: usertools_mod:base}
    custom: {function: usertools_mod:custom}
    exits: {function: usertools_mod:exits}
    interrupt: {function: usertools_mod:interrupt}
    cycle: {function: usertools_mod:cycle}
    deep: {function: usertools_mod:deep}
    huge_state: {function: usertools_mod:huge_state}
    huge_result: {function: usertools_mod:huge_result}
    cyclic_result: {function: usertools_mod:cyclic_result}
    echo:
      function: usertools_mod:echo
      parameters:
        type: object
        properties:
          code: {type: string, pattern: "^(a+)+$"}
        patternProperties:
          "^(b+)+$": {type: string}
"""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "usertools_mod.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("usertools_mod", None)
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(ENV))
    spec = load_suite(tmp_path / "suite.yaml").environment
    environment = make_environment(spec, {})
    assert environment is not None
    return environment


TOOL_FAILURES = {
    "base": "BaseException: not an Exception",
    "custom": "Custom: mine",
    "exits": "sys.exit(7)",
    "interrupt": "KeyboardInterrupt",
    "cycle": "the state after cycle is nested more than",
    "deep": "the state after deep is nested more than",
    "huge_state": "the state after huge_state is larger than",
    "huge_result": "huge_result's result is larger than",
    "cyclic_result": "cyclic_result's result is nested more than",
}


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
@pytest.mark.parametrize("tool", sorted(TOOL_FAILURES))
def test_whatever_a_tool_does_is_that_calls_recorded_error(env: Any, tool: str) -> None:
    part = env.call(tool, {})
    assert part.error is not None and TOOL_FAILURES[tool] in part.error, part.error
    assert env.final_state() == {"kept": True}  # a refused state is put back as it was
    assert env.call("echo", {"code": "aaa"}).result == "aaa"  # and the next call works


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
@pytest.mark.parametrize("code", ["a" * 40 + "!", "a" * 5000 + "b"])
def test_a_backtracking_parameter_pattern_stops_at_the_time_limit(env: Any, code: str) -> None:
    part = env.call("echo", {"code": code})  # unbounded, this pattern takes longer than the test's timeout
    assert part.error is not None and ("took more than" in part.error or "does not match" in part.error)


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it: no timed assertion (noisy under load)
def test_a_backtracking_pattern_property_stops_at_the_time_limit(env: Any) -> None:
    part = env.call("echo", {"code": "a", "b" * 40 + "!": "x"})  # checked, then echo refused the extra name
    assert part.error is not None and "unexpected keyword argument" in part.error


class _Bot:
    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def send(self, text: str) -> Any:
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply() if callable(self.reply) else self.reply


def _long_list() -> list[str]:
    return ["x"] * 10_000_000


def _cyclic_state() -> Any:
    import simulator

    state: dict[str, Any] = {}
    state["me"] = state
    return simulator.Reply(["hi"], state=state)


BOT_FAILURES: dict[str, tuple[Any, str, str]] = {
    "SystemExit": (SystemExit(7), "bot_exception", "sys.exit(7)"),
    "BaseException": (BaseException("boom"), "bot_exception", "BaseException: boom"),
    "KeyboardInterrupt": (KeyboardInterrupt(), "bot_exception", "KeyboardInterrupt"),
    "a 10 MB reply": ("x" * 10_000_000, "invalid_reply", "larger than"),
    "10 million messages": (_long_list, "over_limit", "bot.max_messages_per_turn"),
    "a cyclic state": (_cyclic_state, "invalid_reply", "nested more than"),
}


@pytest.mark.parametrize("case", sorted(BOT_FAILURES))
async def test_a_python_bot_is_held_to_an_http_bots_rules(case: str) -> None:
    reply, kind, phrase = BOT_FAILURES[case]
    with pytest.raises(BotError) as caught:
        await PythonSession(_Bot(reply)).send("hello", 1)
    assert caught.value.kind == kind and phrase in str(caught.value), str(caught.value)


async def test_a_python_bot_that_never_answers_meets_the_turns_deadline() -> None:
    class Sleeper:
        async def send(self, text: str) -> str:
            await asyncio.sleep(3600)
            return "late"

    class Blocker:
        def send(self, text: str) -> str:
            time.sleep(60)  # far past the bound below, so a slow machine never passes for a missed deadline
            return "late"

    for bot in (Sleeper(), Blocker()):
        start = time.monotonic()
        with pytest.raises(BotError) as caught:
            await PythonSession(bot, limits=TurnLimits(timeout_s=0.5)).send("hello", 1)
        assert time.monotonic() - start < 30  # the deadline (0.5 s), not the bot's 60 s or 3,600 s
        assert caught.value.kind == "timeout" and "bot.timeout_s" in str(caught.value)


EXITING_BOT = """
import sys
from simulator import Reply

class Bot:
    def __init__(self, env=None):
        self.env = env
    def send(self, text):
        if "{how}" == "bot":
            sys.exit(7)
        self.env.call("exits")
        self.env.call("cycle")
        return Reply(["Noted."], closed=True)

def make(env=None):
    return Bot(env)
"""


@pytest.mark.parametrize("how", ["bot", "tool"])
def test_sys_exit_in_user_code_never_ends_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    from simulator.cli import main
    from simulator.record.folder import RunFolder

    (tmp_path / "usertools_mod.py").write_text(TOOLS)
    (tmp_path / "exitbot_mod.py").write_text(EXITING_BOT.replace("{how}", how))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("usertools_mod", "exitbot_mod"):
        sys.modules.pop(name, None)
    (tmp_path / "s.yaml").write_text("id: s1\npersona: an adult\ngoal: advice\nfacts: [I feel ill.]\n")
    suite = textwrap.dedent(ENV).replace("nobody:make", "exitbot_mod:make")
    (tmp_path / "suite.yaml").write_text(
        suite + "scenarios: {paths: [s.yaml]}\nuser: {model: offline}\nruns: 2\n"
    )
    code = main(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"])
    assert code in (0, 1, 3)  # the run ends on its own terms (3: all errored), never with the exit code 7
    records = list(RunFolder.open(tmp_path / "run").conversations())
    assert len(records) == 2
    for record in records:
        if how == "bot":
            assert record.error is not None and "sys.exit(7)" in record.error.message
        else:
            calls = [p for t in record.turns for p in t.parts if getattr(p, "type", "") == "tool_call"]
            assert [c.name for c in calls] == ["exits", "cycle"]
            assert all(c.error for c in calls) and record.environment_state == {"kept": True}


def test_the_writer_refuses_a_record_its_reader_would_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Class 9: what `report` would call "not a file simulator wrote" is never written."""
    from datetime import UTC, datetime

    from simulator.errors import UserError
    from simulator.record.folder import dump_line, read_jsonl
    from simulator.record.models import ConversationRecord

    now = datetime.now(UTC)
    record = ConversationRecord(
        id="s#0", scenario_id="s", repeat=0, stop_reason="user_done", turns=[], started_at=now, ended_at=now,
        environment_state={"blob": "é" * 6_000},
    )  # fmt: skip
    monkeypatch.setattr("simulator.record.folder.MAX_RECORD_BYTES", 10_000)
    with pytest.raises(UserError, match=r"s#0: a record of .* over the 0.01 MB a reader takes"):
        dump_line(record)  # 6,000 characters, 12,000 bytes: counted in bytes, as the reader counts
    record.environment_state = {"blob": "é" * 1_000}
    line = dump_line(record)
    path = tmp_path / "conversations.jsonl"
    path.write_text(line, encoding="utf-8")
    assert [r.id for r in read_jsonl(path, ConversationRecord)] == ["s#0"]
