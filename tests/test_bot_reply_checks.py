"""A bot's flags and state are taken strictly (issue 30, item 14): `handed_over: "false"` or `closed: "no"`
is not a handover, a `state` that is a list is not dropped; each is an `invalid_reply` bot error naming the
field, from the HTTP and the Python adapter alike."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from simulator.bots.base import BotError, Reply
from simulator.bots.http_bot import HttpSession
from simulator.bots.python_bot import PythonSession

BAD = [
    ({"handed_over": "false"}, "handed_over"),
    ({"closed": "no"}, "closed"),
    ({"handed_over": 1}, "handed_over"),
    ({"closed": "true"}, "closed"),
    ({"state": ["triage_level", "gp"]}, "state"),
    ({"state": "gp"}, "state"),
    ({"state": {1: "gp"}}, "state"),
]
GOOD = [
    ({"handed_over": True}, (True, False, None)),
    ({"closed": None, "state": {"a": 1}}, (False, False, {"a": 1})),
]


class _Bot:
    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def send(self, text: str) -> Reply:
        return Reply(["ok"], **self.fields)


@pytest.mark.parametrize(("fields", "name"), BAD)
async def test_python_bot_bad_flags_are_bot_errors(fields: dict[str, Any], name: str) -> None:
    with pytest.raises(BotError) as caught:
        await PythonSession(_Bot(fields)).send("hi", 1)
    assert caught.value.kind == "invalid_reply" and f"'{name}'" in str(caught.value)


async def _answer_with(body: dict[str, Any]) -> Any:
    payload = json.dumps({"message": "ok", **body}, default=str).encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(payload), payload))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient() as client:
            return await HttpSession(client, f"http://127.0.0.1:{port}/", "c#0", 5).send("hi", 1)
    finally:
        server.close()


@pytest.mark.parametrize(("fields", "name"), [b for b in BAD if not isinstance(b[0].get("state"), dict)])
async def test_http_bot_bad_flags_are_bot_errors(fields: dict[str, Any], name: str) -> None:
    with pytest.raises(BotError) as caught:
        await _answer_with(fields)
    assert caught.value.kind == "invalid_reply" and f"'{name}'" in str(caught.value)


@pytest.mark.parametrize(("fields", "expected"), GOOD)
async def test_booleans_and_objects_are_taken(fields: dict[str, Any], expected: tuple[Any, ...]) -> None:
    for reply in (await _answer_with(fields), await PythonSession(_Bot(fields)).send("hi", 1)):
        assert (reply.handed_over, reply.closed, reply.state) == expected


# `messages` and `message` together (issue: a FastAPI response model with defaults answers both; the message
# was dropped and the turn judged as a bot that said nothing): an empty field gives way to the other; two that
# both say something must agree, else the reply is ambiguous and an `invalid_reply`, never judged.
ONE_REPLY = [
    ({"messages": [], "message": "Call 999 now"}, ["Call 999 now"]),
    ({"messages": None, "message": "Call 999 now"}, ["Call 999 now"]),
    ({"messages": ["Call 999 now"], "message": ""}, ["Call 999 now"]),
    ({"messages": ["Call 999 now"], "message": None}, ["Call 999 now"]),
    ({"messages": ["Call 999 now"], "message": "Call 999 now"}, ["Call 999 now"]),
    ({"messages": ["Call 999", "now"]}, ["Call 999", "now"]),
    ({"messages": [], "message": ""}, []),
]
AMBIGUOUS = [
    {"messages": ["Rest at home"], "message": "Call 999 now"},
    {"messages": ["Call 999", "now"], "message": "Call 999 now"},
]


async def _raw_answer(body: dict[str, Any]) -> Any:
    """The bot's answer exactly as given (`_answer_with` adds a message of its own)."""
    return await _answer_with({"message": None, **body})


@pytest.mark.parametrize(("body", "said"), ONE_REPLY)
async def test_messages_and_message_together_give_the_one_that_says_something(
    body: dict[str, Any], said: list[str]
) -> None:
    assert (await _raw_answer(body)).messages == said


@pytest.mark.parametrize("body", AMBIGUOUS)
async def test_messages_and_message_that_disagree_are_an_invalid_reply_naming_both(
    body: dict[str, Any],
) -> None:
    with pytest.raises(BotError) as caught:
        await _raw_answer(body)
    assert caught.value.kind == "invalid_reply"
    assert repr(body["message"]) in str(caught.value) and repr(body["messages"]) in str(caught.value)


@pytest.mark.parametrize(
    "body", [{"message": 7}, {"messages": "Call 999 now"}, {"messages": [], "message": ["x"]}]
)
async def test_a_message_field_of_the_wrong_type_is_an_invalid_reply(body: dict[str, Any]) -> None:
    with pytest.raises(BotError) as caught:
        await _raw_answer(body)
    assert caught.value.kind == "invalid_reply"
