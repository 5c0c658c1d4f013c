"""A value made of shared references is as large as its JSON: `check_depth`'s size bound counts each one.

Before, `jsonbounds.check_depth` visited a value shared within a level once, so a list holding the same big
list 1,000 times, nested a few levels (the "billion laughs": YAML aliases, or a Python bot's reply), passed
the byte cap while its JSON was gigabytes. Now a shared value's size (and height) is worked out once and
added at each place it appears: exact, linear in the distinct containers, and stopped at the cap. Doors
tested: a suite's and a scenario's environment state written with YAML anchors (the state after a tool
call), a python bot's reply and its final_state(); a cycle deep inside is still refused.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.bots.base import BotError
from simulator.bots.environment import make_environment
from simulator.bots.python_bot import PythonSession
from simulator.bots.turn_limits import TurnLimits
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.jsonbounds import JSONRefused, check_depth


def _laughs(leaf: Any, width: int = 1000, levels: int = 3) -> list[Any]:
    """`levels` lists each holding the one below `width` times: width^levels leaves as JSON."""
    value = leaf
    for _ in range(levels):
        value = [value] * width
    return value


def _laughs_dict(width: int = 1000, levels: int = 3) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x" * 10}
    for _ in range(levels):
        value = {f"k{number}": value for number in range(width)}
    return value


def _tuples(width: int = 1000, levels: int = 3) -> tuple[Any, ...]:
    value: tuple[Any, ...] = ("x" * 10,)
    for _ in range(levels):
        value = (value,) * width
    return value


def _mixed() -> dict[str, Any]:
    """Shared at several levels and distances: the same row in different tables, tables in a dict."""
    row = ["x" * 100] * 10
    table = [row] * 100
    return {"a": table, "b": [table, [table, {"c": table}]], "d": [[row] * 100] * 10}


# Each: a value whose JSON is far larger than the cap (gigabytes for the first three).
SHARED = {
    "lists": lambda: _laughs(["x" * 10] * 10),
    "objects": _laughs_dict,
    "tuples": _tuples,
    "shared at several depths": _mixed,
}


@pytest.mark.timeout(120)  # a walk exponential in the levels would be ended here: no timed assertion
@pytest.mark.parametrize("shape", sorted(SHARED))
def test_a_value_of_shared_references_is_refused_at_the_cap(shape: str) -> None:
    with pytest.raises(JSONRefused, match="the reply is larger than 100,000 bytes as JSON"):
        check_depth(SHARED[shape](), "the reply", max_bytes=100_000)


@pytest.mark.parametrize(
    "value",
    [
        _laughs(["x" * 10, 1, None], width=7, levels=3),
        _laughs_dict(width=6, levels=3),
        _tuples(width=9, levels=3),
        {"a": (shared := [{"k": "v" * 50}] * 4), "b": [shared, [shared]], "c": {"d": shared}},
    ],
)
def test_the_size_counted_is_the_size_written(value: Any) -> None:
    """Shared or not, the bound is the JSON's own size within a small factor: taken at twice its length,
    refused at half of it."""
    written = len(json.dumps(value))
    check_depth(value, "v", max_bytes=2 * written)
    with pytest.raises(JSONRefused, match="larger than"):
        check_depth(value, "v", max_bytes=written // 2)


def test_a_shared_value_met_again_deeper_is_measured_there() -> None:
    """Its height is kept with its size: met first near the top, then far down, it is too deep there."""
    deep: Any = "v"
    for _ in range(40):
        deep = [deep]
    further = deep
    for _ in range(30):
        further = [further]
    check_depth([deep, deep], "v")
    with pytest.raises(JSONRefused, match="nested more than 64 levels"):
        check_depth([deep, further], "v")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("max_bytes", [None, 10**12])
def test_a_deep_cycle_among_shared_references_is_refused(max_bytes: int | None) -> None:
    """A cycle 50 levels down, under a billion-laughs fan-out, with and without a byte cap."""
    bottom: list[Any] = []
    chain: list[Any] = bottom
    for _ in range(50):
        chain = [chain]
    top = [chain] * 1000
    bottom.append(top)  # the bottom holds the top again
    with pytest.raises(JSONRefused, match="contains itself"):
        check_depth([top] * 1000, "the state", max_bytes=max_bytes)
    loop: dict[str, Any] = {}
    loop["self"] = [loop, loop]  # short, and shared twice
    with pytest.raises(JSONRefused, match="contains itself"):
        check_depth({"a": loop, "b": loop}, "the state", max_bytes=max_bytes)


# ---------------------------------------------------------------------------------------- YAML anchors

TOOLS = """
def lookup(state):
    return state["big"]

def touch(state):
    state["touched"] = True
    return "done"
"""

# 400 references to one 1 KB row: 400 KB of JSON, within the YAML reader's own alias bounds (10 MB, 10,000
# extra values), past the suite's bot.max_reply_bytes.
ANCHORED = """
row: &row ["{text}"]
table: &table [{rows}]
big: [{tables}]
""".format(text="x" * 1000, rows=", ".join(["*row"] * 20), tables=", ".join(["*table"] * 20))

SUITE = """
name: env
bot: {{type: python, factory: nobody:make, max_reply_bytes: 100000}}
environment:
  state:
{state}
  tools:
    lookup: {{function: shared_tools_mod:lookup}}
    touch: {{function: shared_tools_mod:touch}}
"""


@pytest.mark.parametrize("where", ["suite", "scenario"])
def test_yaml_anchors_in_the_state_count_each_alias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    (tmp_path / "shared_tools_mod.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("shared_tools_mod", None)
    state = textwrap.indent(ANCHORED if where == "suite" else "kept: true\n", " " * 4)
    (tmp_path / "suite.yaml").write_text(SUITE.format(state=state))
    suite = load_suite(tmp_path / "suite.yaml")
    scenario_state: dict[str, Any] = {}
    if where == "scenario":
        scenario = "id: s\npersona: p\ngoal: g\nenvironment:\n" + textwrap.indent(ANCHORED, "  ")
        (tmp_path / "s.yaml").write_text(scenario)
        (loaded,) = load_scenarios([tmp_path / "s.yaml"])
        scenario_state = loaded.environment
    env = make_environment(suite.environment, scenario_state, limits=TurnLimits.of(suite.bot))
    assert env is not None
    for tool in ("lookup", "touch"):  # each call's state (400 KB as JSON) is past the suite's cap
        part = env.call(tool, {})
        assert part.error is not None, part
        assert f"the state after {tool} is larger than 100,000 bytes as JSON" in part.error, part.error


# ------------------------------------------------------------------------------------------ python bot


class _Bot:
    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def send(self, text: str) -> Any:
        return self.reply

    def final_state(self) -> Any:
        return self.reply.state


REPLIES = {
    "a state of shared lists": lambda: simulator.Reply(["hi"], state={"rows": _laughs(["x" * 10] * 10)}),
    "a state of shared objects": lambda: simulator.Reply(["hi"], state=_laughs_dict()),
    "a state of shared tuples": lambda: simulator.Reply(["hi"], state={"rows": _tuples()}),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", sorted(REPLIES))
async def test_a_python_bots_reply_of_shared_references_is_a_bot_error(case: str) -> None:
    session = PythonSession(_Bot(REPLIES[case]()))
    with pytest.raises(BotError) as caught:
        await session.send("hello", 1)
    assert caught.value.kind == "invalid_reply", caught.value
    assert "larger than 8,000,000 bytes as JSON" in str(caught.value), str(caught.value)
    assert "bot.max_reply_bytes" in str(caught.value)
    with pytest.raises(BotError, match="final_state\\(\\) is larger than"):
        await session.final_state()
