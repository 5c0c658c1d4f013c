"""Three ways a python bot used to cost more than its own conversation, each closed by mechanism and tried
with several inputs:

1. a reply holding a value JSON has no form for (an object, a set, a datetime, NaN, a key that is not text,
   in the state, a tool call's arguments or final_state()) ended the whole run when the record was written:
   it is now the bot's `invalid_reply` naming where (`jsonbounds.check_data`), and a record that cannot be
   written anyway becomes an error record (`record/folder.py`, `RecordUnwritable`);
2. a bot raising `asyncio.CancelledError` itself made its conversations vanish (never recorded, the run
   "complete"): it is now the bot's exception, while a real cancellation still stops (`eventloop.being_cancelled`);
3. a bot coroutine that catches CancelledError and waits again held its conversation, and the run, forever:
   past the deadline and a short grace it is closed and left (`eventloop.apart`), and a stop signal still
   stops the run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import decimal
import enum
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.bots.base import Reply
from simulator.bots.python_bot import PythonBotFactory
from simulator.bots.turn_limits import ABANDON_AFTER_S, TurnLimits
from simulator.config.scenario import Scenario
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.eventloop import apart, being_cancelled
from simulator.record.folder import CONVERSATIONS, dump_line, dump_writable, read_jsonl
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import ToolCallPart
from simulator.record.transcript import Turn
from simulator.users.offline import OfflineUser
from tests.support.waiting import eventually, until

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = Scenario(id="s", persona="A man.", goal="Ask about chest pain.", facts=["Pain."], max_turns=2)
SUITE = {
    "bot": {"type": "python", "factory": "x.y:z"},
    "user": {"model": "offline"},
    "outcome": {
        "key": "triage_level",
        "levels": ["self_care", "gp", "urgent", "emergency"],
        "critical": "emergency",
    },
    "runs": 1,
}
SCENARIOS = [
    {"id": "chest", "persona": "A man.", "goal": "Ask about chest pain.", "facts": ["Pain for two hours."]},
    {"id": "throat", "persona": "A student.", "goal": "Ask about a sore throat.", "facts": ["No fever."]},
]
FAST = TurnLimits(timeout_s=0.3)


def _user(plan: ConversationPlan, attempt: int) -> OfflineUser:
    return OfflineUser(plan.scenario, seed=0, repeat=plan.repeat, volunteer_share=0.0)


async def _play(bot: Any, limits: TurnLimits | None = None) -> ConversationRecord:
    """One conversation with the python bot `bot` (a class); the record must be writable."""
    factory = PythonBotFactory("test:bot", bot, limits)
    record = await asyncio.wait_for(
        run_conversation(ConversationPlan(SCENARIO, 0), _user, factory, limits=limits), 60
    )
    assert dump_line(record).endswith("\n")
    return record


def _bot_error(record: ConversationRecord, kind: str, *phrases: str) -> str:
    assert record.stop_reason == "error" and record.error is not None, record.stop_reason
    assert (record.error.source, record.error.kind) == ("bot", kind), record.error
    for phrase in phrases:
        assert phrase in record.error.message, record.error.message
    return record.error.message


def _replying(reply: Callable[[], Any]) -> type:
    class Bot:
        def send(self, text: str) -> Any:
            return reply()

    return Bot


def _run(bot: Any, tmp_path: Path) -> tuple[Any, list[dict[str, Any]]]:
    result = simulator.run(simulator.Suite(**SUITE), bot=bot, scenarios=SCENARIOS, out=tmp_path / "run")
    lines = (tmp_path / "run" / CONVERSATIONS).read_text().splitlines()
    return result, [json.loads(line) for line in lines]


# ------------------------------------------------------------------------ 1. values JSON has no form for


class Level(enum.Enum):
    GP = "gp"


def _self_containing() -> dict[str, Any]:
    found: dict[str, Any] = {}
    found["me"] = found
    return found


# (the state's triage_level, a phrase the error holds)
UNRECORDABLE_STATES: dict[str, tuple[Any, str]] = {
    "an object": (object(), "state.triage_level is of type object"),
    "a set": ({"gp", "urgent"}, "state.triage_level is of type set"),
    "bytes": (b"gp", "state.triage_level is of type bytes"),
    "a datetime": (datetime.datetime(2024, 1, 1), "state.triage_level is of type datetime"),
    "a Decimal": (decimal.Decimal("1.5"), "of type Decimal"),
    "an Enum that is not text": (Level.GP, "of type Level"),
    "NaN": (float("nan"), "state.triage_level is the number nan"),
    "infinity, in a list": ([1.0, float("inf")], "state.triage_level[1] is the number inf"),
    "a number of 700 digits": (10**700, "more than 640 digits"),
    "a key that is not text, nested": ({"level": {1: "gp"}}, "state.triage_level.level has the key 1 (int)"),
    "a tuple key": ({(1, 2): "gp"}, "has the key (1, 2) (tuple)"),
    "an object under a key with a space": ({"the level": object()}, 'state.triage_level["the level"]'),
}


@pytest.mark.parametrize("case", sorted(UNRECORDABLE_STATES))
async def test_a_state_holding_what_json_cannot_is_the_bots_invalid_reply(case: str) -> None:
    value, phrase = UNRECORDABLE_STATES[case]
    record = await _play(_replying(lambda: Reply(["ok"], state={"triage_level": value})))
    _bot_error(record, "invalid_reply", phrase, "the bot's state")


# (the parts of the reply, a phrase the error holds)
UNRECORDABLE_PARTS: dict[str, tuple[Callable[[], list[Any]], str]] = {
    "an object in a tool call's arguments": (
        lambda: [{"type": "tool_call", "name": "f", "arguments": {"a": object()}}, "ok"],
        "part 1 (tool_call), field arguments.a is of type object",
    ),
    "a set in a tool call's result": (
        lambda: ["ok", {"type": "tool_call", "name": "f", "result": {"seen": {1, 2}}}],
        "part 2 (tool_call), field result.seen is of type set",
    ),
    "a datetime in a ToolCallPart's arguments": (
        lambda: [ToolCallPart(name="f", arguments={"when": datetime.date(2024, 1, 1)})],
        "field arguments.when is of type date",
    ),
    "NaN in a tool call's arguments": (
        lambda: [{"type": "tool_call", "name": "f", "arguments": {"t": [float("nan")]}}],
        "field arguments.t[0] is the number nan",
    ),
}


@pytest.mark.parametrize("case", sorted(UNRECORDABLE_PARTS))
async def test_a_part_holding_what_json_cannot_is_the_bots_invalid_reply(case: str) -> None:
    parts, phrase = UNRECORDABLE_PARTS[case]
    _bot_error(await _play(_replying(lambda: Reply(parts=parts()))), "invalid_reply", phrase)


@pytest.mark.parametrize("value", [object(), {1, 2}, float("nan")], ids=["object", "set", "nan"])
@pytest.mark.parametrize("how", ["sync", "async"])
async def test_a_final_state_holding_what_json_cannot_is_the_bots_invalid_reply(value: Any, how: str) -> None:
    class Bot:
        def send(self, text: str) -> Reply:
            return Reply(["ok"], closed=True)

        def final_state(self) -> Any:
            return {"triage_level": value}

    class AsyncBot(Bot):
        async def final_state(self) -> Any:  # type: ignore[override]
            return {"triage_level": value}

    record = await _play(Bot if how == "sync" else AsyncBot)
    _bot_error(record, "invalid_reply", "final_state().triage_level")


async def test_json_data_of_every_kind_is_still_taken() -> None:
    """What JSON holds is taken as before: text (an Enum that is text too), numbers, booleans, null,
    lists, tuples and objects, nested."""

    class Text(enum.StrEnum):
        GP = "gp"

    state = {
        "triage_level": Text.GP,
        "n": 3,
        "x": 1.5,
        "flags": [True, None],
        "pair": (1, "a"),
        "deep": {"a": {}},
    }
    record = await _play(_replying(lambda: Reply(["ok"], state=state, closed=True)))
    assert record.error is None and record.final_state is not None
    assert json.loads(dump_line(record))["final_state"]["triage_level"] == "gp"


@pytest.mark.parametrize("value", [object(), {1, 2}], ids=["object", "set"])
def test_a_run_with_such_a_bot_goes_on_and_records_every_conversation(value: Any, tmp_path: Path) -> None:
    result, records = _run(lambda text: Reply(["ok"], state={"triage_level": value}), tmp_path)
    assert [r["id"] for r in records] == ["chest#0", "throat#0"] and result.errors == 2
    assert all(
        r["error"]["kind"] == "invalid_reply" and "state.triage_level" in r["error"]["message"]
        for r in records
    )


NOW = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)


def _record(**fields: Any) -> ConversationRecord:
    return ConversationRecord(
        id="s#0",
        scenario_id="s",
        repeat=0,
        stop_reason="user_done",
        started_at=NOW,
        ended_at=NOW,
        **{"turns": [], **fields},
    )


# What another path could still let in: the record is written as an error, never ends the run.
UNWRITABLE_RECORDS: dict[str, Callable[[], ConversationRecord]] = {
    "an object in the final state": lambda: _record(final_state={"triage_level": object()}),
    "an object in the environment's state": lambda: _record(environment_state={"seen": [object()]}),
    "an object in a turn's tool call": lambda: _record(
        turns=[
            Turn(
                index=0, role="bot", parts=[ToolCallPart(name="f", arguments={"a": object()})], started_at=NOW
            )
        ]
    ),
}


@pytest.mark.parametrize("case", sorted(UNWRITABLE_RECORDS))
def test_a_record_that_cannot_be_written_is_written_as_an_error(case: str, tmp_path: Path) -> None:
    line = dump_writable(UNWRITABLE_RECORDS[case]())
    (tmp_path / "c.jsonl").write_text(line)
    [record] = list(read_jsonl(tmp_path / "c.jsonl", ConversationRecord))
    assert record.stop_reason == "error" and record.error is not None
    assert record.error.kind == "record_unwritable" and "cannot be written as JSON" in record.error.message


def test_a_verdict_that_cannot_be_written_is_written_as_an_error() -> None:
    verdict = Verdict(
        conversation_id="s#0",
        scenario_id="s",
        repeat=0,
        criterion_id="c",
        kind="code",
        result="pass",
        actual={"level": object()},
    )
    written = json.loads(dump_writable(verdict))
    assert written["result"] == "error" and written["error"]["kind"] == "record_unwritable"


# ------------------------------------------------------------------------------- 2. a bot's own cancel


async def _own_cancel_async(text: str) -> str:
    raise asyncio.CancelledError


async def _own_cancel_after_a_wait(text: str) -> str:
    await asyncio.sleep(0.01)
    raise asyncio.CancelledError("mine")


async def _own_cancel_after_its_own_timeout(text: str) -> str:
    try:
        async with asyncio.timeout(0.01):  # expires inside the bot and is handled there: uncancelled
            await asyncio.sleep(10)
    except TimeoutError:
        pass
    raise asyncio.CancelledError


def _own_cancel_sync(text: str) -> str:
    raise asyncio.CancelledError


OWN_CANCELS: dict[str, Callable[[str], Any]] = {
    "a sync bot": _own_cancel_sync,
    "an async bot": _own_cancel_async,
    "an async bot, after awaiting": _own_cancel_after_a_wait,
    "an async bot, after its own asyncio.timeout expired": _own_cancel_after_its_own_timeout,
}


def _as_bot(function: Callable[[str], Any]) -> type:
    class Bot:
        send = staticmethod(function)

    return Bot


@pytest.mark.parametrize("case", sorted(OWN_CANCELS))
async def test_a_bots_own_cancelled_error_is_its_exception(case: str) -> None:
    record = await _play(_as_bot(OWN_CANCELS[case]))
    _bot_error(record, "bot_exception", "CancelledError itself")


@pytest.mark.parametrize("how", ["sync", "async"])
async def test_a_final_state_or_factory_raising_cancelled_error_is_the_bots_exception(how: str) -> None:
    class Bot:
        def send(self, text: str) -> Reply:
            return Reply(["ok"], closed=True)

        def final_state(self) -> Any:
            raise asyncio.CancelledError

    class AsyncBot(Bot):
        async def final_state(self) -> Any:  # type: ignore[override]
            raise asyncio.CancelledError

    _bot_error(
        await _play(Bot if how == "sync" else AsyncBot), "bot_exception", "final_state()", "CancelledError"
    )

    async def factory() -> Any:
        raise asyncio.CancelledError

    def sync_factory() -> Any:
        raise asyncio.CancelledError

    made = PythonBotFactory("test:factory", factory if how == "async" else sync_factory)
    record = await run_conversation(ConversationPlan(SCENARIO, 0), _user, made)
    _bot_error(record, "bot_exception", "factory test:factory", "CancelledError")


@pytest.mark.parametrize("bot", [_own_cancel_sync, _own_cancel_async], ids=["sync", "async"])
def test_a_run_with_a_bot_raising_cancelled_error_records_both_conversations(
    bot: Any, tmp_path: Path
) -> None:
    result, records = _run(bot, tmp_path)
    assert [r["error"]["kind"] for r in records] == ["bot_exception", "bot_exception"] and result.errors == 2


@pytest.mark.parametrize("how", ["sync", "async"])
async def test_a_real_cancellation_of_the_conversation_still_cancels_it(how: str) -> None:
    """A stop signal cancels the conversation's task: that is not the bot's error, it ends the task."""
    asked = threading.Event()

    def slow(text: str) -> str:
        asked.set()
        time.sleep(10)
        return "late"

    async def slow_async(text: str) -> str:
        asked.set()
        await asyncio.sleep(10)
        return "late"

    factory = PythonBotFactory("test:slow", _as_bot(slow if how == "sync" else slow_async))
    task = asyncio.create_task(run_conversation(ConversationPlan(SCENARIO, 0), _user, factory))
    await eventually(asked.is_set, "the bot's turn")  # cancelled in the middle of it, on any machine
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_being_cancelled_tells_a_request_from_a_raise() -> None:
    seen: list[bool] = []

    async def watch() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            seen.append(being_cancelled())
            raise

    async def raises() -> None:
        try:
            raise asyncio.CancelledError
        except asyncio.CancelledError:
            seen.append(being_cancelled())

    task = asyncio.create_task(watch())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.create_task(raises())
    assert seen == [True, False]


# ------------------------------------------------------------------ 3. a coroutine that will not be cancelled


async def _swallows_forever(text: str) -> str:
    while True:
        with contextlib.suppress(asyncio.CancelledError):  # every cancellation caught, and waiting again
            await asyncio.sleep(1000)


async def _swallows_and_spins(text: str) -> str:
    while True:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.01)


async def _swallows_in_a_finally(text: str) -> str:
    try:
        await asyncio.sleep(1000)
    finally:
        while True:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(1000)


SHIELDED: dict[str, Callable[[str], Any]] = {
    "swallows every cancellation while sleeping": _swallows_forever,
    "swallows every cancellation in a busy loop": _swallows_and_spins,
    "waits forever in a finally block": _swallows_in_a_finally,
}


@pytest.mark.parametrize("case", sorted(SHIELDED))
async def test_a_turn_that_will_not_be_cancelled_is_abandoned_past_its_deadline(case: str) -> None:
    started = time.monotonic()
    record = await _play(_as_bot(SHIELDED[case]), FAST)
    _bot_error(record, "timeout", "bot.timeout_s", "did not stop when cancelled and was abandoned")
    assert time.monotonic() - started < FAST.timeout_s + ABANDON_AFTER_S + 3  # type: ignore[operator]


async def test_a_final_state_that_will_not_be_cancelled_is_abandoned() -> None:
    class Bot:
        def send(self, text: str) -> Reply:
            return Reply(["ok"], closed=True)

        async def final_state(self) -> Any:
            return await _swallows_forever("")

    _bot_error(await _play(Bot, FAST), "timeout", "final_state() did not return", "abandoned")


async def test_a_turn_that_ends_late_after_its_cancellation_is_a_plain_timeout() -> None:
    async def late(text: str) -> str:
        try:
            await asyncio.sleep(1000)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)
        return "too late"

    message = _bot_error(await _play(_as_bot(late), FAST), "timeout", "bot.timeout_s")
    assert "abandoned" not in message


SHIELDED_MODULE = """
import asyncio
import pathlib

class Bot:
    async def send(self, text):
        pathlib.Path("asked").touch()  # in the run's folder: the test sees the turn is under way
        while True:
            try:
                await asyncio.sleep(1000)
            except asyncio.CancelledError:
                pass
"""


def _shielded_run(tmp_path: Path, timeout_s: float, runs: int) -> subprocess.Popen[bytes]:
    (tmp_path / "shielded_bot.py").write_text(SHIELDED_MODULE)
    (tmp_path / "s.yaml").write_text("id: s1\npersona: p\ngoal: ask for help\nmax_turns: 2\n")
    (tmp_path / "suite.yaml").write_text(
        f"scenarios: {{paths: [s.yaml]}}\nbot: {{type: python, factory: 'shielded_bot:Bot', timeout_s: {timeout_s}}}\n"
        f"user: {{model: offline}}\nruns: {runs}\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), *sys.path])}
    return subprocess.Popen(
        [sys.executable, "-m", "simulator", "run", "suite.yaml", "--out", "run", "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )


def test_a_run_whose_bot_will_not_be_cancelled_finishes_and_exits(tmp_path: Path) -> None:
    """The abandoned coroutines cannot keep the process from exiting (asyncio waits, at exit, for every
    task it cancels)."""
    proc = _shielded_run(tmp_path, 0.5, 2)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, err.decode()[-2000:]  # every conversation an error: nothing judged
    assert b"run complete: 2 conversations (error=2)" in out + err
    for line in (tmp_path / "run" / CONVERSATIONS).read_text().splitlines():
        assert json.loads(line)["error"]["kind"] == "timeout"


def test_a_stop_signal_stops_a_run_whose_bot_will_not_be_cancelled(tmp_path: Path) -> None:
    proc = _shielded_run(tmp_path, 600, 4)
    try:
        until(lambda: (tmp_path / "asked").exists(), "the bot's turns under way")
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        proc.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        proc.kill()
    assert proc.returncode == 130 and took < 15, (proc.returncode, took)


@pytest.mark.parametrize("how", ["a future", "a coroutine"])
async def test_apart_keeps_a_cancellation_arriving_as_the_awaited_thing_finishes(how: str) -> None:
    """`apart` waits with asyncio.wait, which does not lose it (CPython gh-86296, tests/test_stop_signals.py)."""
    answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def inner() -> int:
        return await answer

    async def awaited() -> int:
        return await (answer if how == "a future" else inner())

    task = asyncio.create_task(apart(awaited(), 10, 1))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    answer.set_result(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class _ClosesBadly:
    """Answers and closes the chat; its close is the defect under test (`how`)."""

    how = ""

    def send(self, text: str) -> Any:
        from simulator.bots.base import Reply

        return Reply(["Please call 999 now."], closed=True, state={"triage_level": "emergency"})


class _BlockingClose(_ClosesBadly):
    def close(self) -> None:
        time.sleep(60)


class _NeverClosing(_ClosesBadly):
    async def aclose(self) -> None:
        await asyncio.Event().wait()


class _ShieldedClose(_ClosesBadly):
    async def aclose(self) -> None:
        while True:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(1000)


class _ExitingClose(_ClosesBadly):
    def close(self) -> None:
        raise SystemExit(3)


@pytest.mark.timeout(120)  # a hang, not a slow machine, fails it
@pytest.mark.parametrize("bot", [_BlockingClose, _NeverClosing, _ShieldedClose, _ExitingClose])
def test_a_bot_whose_close_hangs_or_exits_leaves_the_run_finished(tmp_path: Path, bot: type) -> None:
    """A bot's close() ran on the event loop with no deadline: one that blocked or never returned held its
    conversation and the run for ever; one raising SystemExit ended the run. Now it is bounded by the turn's
    deadline and what it does is left: the conversation keeps what the bot said."""
    import simulator

    suite = simulator.Suite(
        bot={"type": "python", "factory": "x.y:z", "timeout_s": 1},
        user={"model": "offline"},
        outcome={"key": "triage_level", "levels": ["self_care", "gp", "urgent", "emergency"]},
        runs=1,
    )
    scenarios = [{"id": f"s{n}", "persona": "p", "goal": "g", "expected": {"triage_level": "emergency"}}
                 for n in range(2)]  # fmt: skip
    result = simulator.run(suite, bot=bot, scenarios=scenarios, out=tmp_path / "run")
    assert len(result.conversations) == 2
    assert all(c.error is None and c.stop_reason == "bot_closed" for c in result.conversations)
