"""Ways a python bot used to cost more than its own conversation, each closed by mechanism and tried with
several inputs:

1. a reply holding a value JSON has no form for (an object, a set, a datetime, NaN, a key that is not text,
   in the state, a tool call's arguments or final_state()) ended the whole run when the record was written:
   it is now the bot's `invalid_reply` naming where (`jsonbounds.check_data`), and a record that cannot be
   written anyway becomes an error record (`record/folder.py`, `RecordUnwritable`);
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import enum
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.bots.base import Reply
from simulator.bots.python_bot import PythonBotFactory
from simulator.bots.turn_limits import TurnLimits
from simulator.config.scenario import Scenario
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.record.folder import CONVERSATIONS, dump_line, dump_writable, read_jsonl
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.parts import ToolCallPart
from simulator.record.transcript import Turn
from simulator.users.offline import OfflineUser

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
