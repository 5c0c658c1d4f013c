"""Which recorded errors are the bot's fault (record/faults.py): a finding about the bot, not the bench."""

from __future__ import annotations

import pytest

from simulator.record.faults import BOT_FAULTS, bot_faults
from simulator.record.models import ErrorInfo
from tests.test_tool_checks import call, convo


@pytest.mark.parametrize(
    ("source", "kind", "fault"),
    [
        ("bot", "cloud_api_rule", True),  # four reply buttons where the Cloud API allows three
        ("bot", "invalid_reply", True),  # a malformed reply: a flag that is not a boolean, a bad part
        ("bot", "over_limit", True),  # 1,000 messages in a turn, a tool called in a loop
        ("bot", "timeout", False),  # the bench cannot tell a slow bot from a slow machine
        ("bot", "connection", False),
        ("bot", "start", False),
        ("bot", "auth", False),  # the engine's made-up token, not the bot's doing
        ("user", "invalid_reply", False),  # the simulated user's, never the bot's
        ("engine", "cloud_api_rule", False),
    ],
)
def test_an_ending_error_is_a_bot_fault_only_when_the_bot_caused_it(
    source: str, kind: str, fault: bool
) -> None:
    record = convo(["hello"], stop="error")
    record.error = ErrorInfo(source=source, kind=kind, message="what it said")  # type: ignore[arg-type]
    found = bot_faults(record)
    assert [(f.kind, f.detail) for f in found] == ([(kind, "what it said")] if fault else [])
    assert all(f.kind in BOT_FAULTS for f in found)


def test_a_refused_tool_call_is_a_fault_of_the_side_that_made_it() -> None:
    bad = "the arguments do not fit book's parameters: 'urgency' is a required property"
    record = convo([call("book", error=bad, patient="P1"), "Sorry, let me try again."])
    (fault,) = bot_faults(record)
    assert fault.kind == "tool_arguments" and "'urgency' is a required property" in fault.detail
    user_side = convo([call("read", error="no tool named 'read' (tools: x)", side="user"), "ok"])
    assert bot_faults(user_side) == []
