"""Every Graph API call a bot makes is placed or refused as the Cloud API would, and every refusal is a bot
error naming its field and rule, recorded at once: never a silent drop, never "the bot sent no message".
Addressing by `to` (the old phone-number shape) and by `recipient` (the BSUID, Graph API v26), the answer's
`contacts[]`, and the calls that name no conversation (delivered to the conversations waiting then)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from simulator.bots.base import BotError
from simulator.bots.whatsapp.events import Identity
from simulator.bots.whatsapp.graph import GraphApi
from simulator.record.redact import forget_secrets
from tests._whatsapp_bots import PlantedBot, RawCall, answers, channel_for, text


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("WHATSAPP_APP_SECRET", "app-secret-123")
    monkeypatch.setenv("WHATSAPP_ACCESS_TOKEN", "access-token-456")
    monkeypatch.setenv("WHATSAPP_VERIFY_TOKEN", "verify-token-789")
    yield
    forget_secrets()


def _message(**address: Any) -> RawCall:
    return RawCall(json={"messaging_product": "whatsapp", **address, "type": "text", "text": {"body": "hi"}})


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


# (what the bot calls, the error kind, a phrase the error must hold); a message whose address names nobody is
# delivered to the conversation waiting for the bot.
MALFORMED: list[tuple[str, Any, str, str]] = [
    ("no address", _message(), "cloud_api_rule", "to / recipient a message needs `to`"),
    ("unknown to", _message(to="447000000001"), "cloud_api_rule", "to '447000000001' is no user of this run"),
    ("unknown recipient", _message(recipient="GB.42"), "cloud_api_rule", "recipient 'GB.42' is no user"),
    (
        "not a bsuid",
        _message(recipient="alex"),
        "cloud_api_rule",
        "recipient must be a business-scoped user id",
    ),
    (
        "group",
        _message(to="447000000001", recipient_type="group"),
        "cloud_api_rule",
        "recipient_type must be",
    ),
    (
        "not json",
        RawCall(content=b"to=447700900123&text=hi"),
        "cloud_api_rule",
        "the request body is not JSON",
    ),
    ("a json list", RawCall(json=[{"to": "1"}]), "cloud_api_rule", "the request body must be a JSON object"),
    ("deep json", RawCall(content=_deep(100_000)), "cloud_api_rule", "the request body is nested more than"),
    (
        "json deep enough to parse",
        RawCall(content=_deep(500)),
        "cloud_api_rule",
        "nested more than 64 levels",
    ),
    (
        "deep json in an object",
        RawCall(content=b'{"to": ' + b'{"a": ' * 200 + b"1" + b"}" * 201),
        "cloud_api_rule",
        "nested more than 64 levels",
    ),
    (
        "too large",
        RawCall(content=b"x" * (5 * 1024 * 1024)),
        "cloud_api_rule",
        "the request body is over 4 MB",
    ),
    (
        "wrong token",
        RawCall(json={"recipient": "GB.1"}, token="stale"),
        "auth",
        "without the right bearer token",
    ),
    (
        "read unknown",
        RawCall(json={"status": "read", "message_id": "wamid.nope"}),
        "cloud_api_rule",
        "marked",
    ),
    ("unknown media", RawCall("GET", "/{version}/1234567890123456"), "cloud_api_rule", "asked for media"),
    (
        "unknown path",
        RawCall("GET", "/{version}/{number}/business_profile"),
        "cloud_api_rule",
        "does not serve",
    ),
    ("no version", RawCall(path="/{number}/messages"), "cloud_api_rule", "does not serve"),
]


@pytest.mark.parametrize(("case", "call", "kind", "phrase"), MALFORMED, ids=[m[0] for m in MALFORMED])
async def test_a_call_the_engine_cannot_place_is_a_bot_error_naming_the_rule_at_once(
    tmp_path: Any, case: str, call: RawCall, kind: str, phrase: str
) -> None:
    async for channel in channel_for(lambda m, b: [(0.0, call)], tmp_path, verify=False, timeout_s=20):
        session = await channel.factory.open(f"run/{case.replace(' ', '-')}#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        assert caught.value.kind == kind, str(caught.value)
        assert phrase in str(caught.value)
        assert "sent no message" not in str(caught.value)
        status, _ = (await answers(channel.bot, 1))[0]
        assert status >= 400  # and the bot saw the API's refusal


@pytest.mark.parametrize("address", ["to", "recipient", "both"])
async def test_replies_by_phone_number_or_bsuid_are_answered_with_contacts_as_the_cloud_api_does(
    tmp_path: Any, address: str
) -> None:
    async for channel in channel_for(
        lambda m, b: [(0.0, text("hello"))], tmp_path, verify=False, address=address
    ):
        session = await channel.factory.open("run/addr#0/1")
        reply = await session.send("hi", 0)
        assert reply.messages == ["hello"]
        status, answer = (await answers(channel.bot, 1))[0]
        assert status == 200 and answer["messages"][0]["id"].startswith("wamid.")
        if address == "recipient":  # v26: the BSUID echoed, no phone number
            assert answer["contacts"] == [{"input": session.who.user_id, "user_id": session.who.user_id}]
        else:  # `to` (it wins when both are given): the phone number echoed with its wa_id
            assert answer["contacts"] == [{"input": session.who.wa_id, "wa_id": session.who.wa_id}]


async def test_a_phone_number_written_with_punctuation_reaches_its_conversation(tmp_path: Any) -> None:
    def script(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, Any]]:
        number = message["from"]
        spaced = f"+{number[:2]} {number[2:6]}-{number[6:]}"
        return [(0.0, _message(to=spaced))]

    async for channel in channel_for(script, tmp_path, verify=False):
        session = await channel.factory.open("run/plus#0/1")
        assert (await session.send("hi", 0)).messages == ["hi"]
        _, answer = (await answers(channel.bot, 1))[0]
        assert answer["contacts"][0]["wa_id"] == session.who.wa_id and answer["contacts"][0][
            "input"
        ].startswith("+")


async def _call(graph: GraphApi, body: Any) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(
            f"{graph.url}/v26.0/106540352242922/messages",
            content=json.dumps(body),
            headers={"Authorization": "Bearer token", "Content-Type": "application/json"},
        )


async def test_a_call_naming_no_conversation_goes_to_every_waiting_one_or_else_to_the_next() -> None:
    graph = GraphApi("token", "106540352242922")
    await graph.start()
    try:
        a = graph.open_inbox(Identity.for_conversation("run/a#0/1", "Alex", "GB"))
        b = graph.open_inbox(Identity.for_conversation("run/b#0/1", "Sam", "GB"))
        later = graph.open_inbox(Identity.for_conversation("run/c#0/1", "Kim", "GB"))
        graph.directory.begin_wait(a)
        graph.directory.begin_wait(b)
        assert (await _call(graph, {"messaging_product": "whatsapp", "type": "text"})).status_code == 400
        for inbox in (a, b):
            item = inbox.queue.get_nowait()
            assert item.error is not None and "each of the 2 conversations waiting" in item.error
            assert "the bot sent neither" in item.error
        assert later.queue.empty()  # not waiting: not blamed
        graph.directory.end_wait(a)
        graph.directory.end_wait(b)
        assert (await _call(graph, ["not", "an", "object"])).status_code == 400  # nobody waits now
        assert later.queue.empty()
        graph.directory.begin_wait(later)  # the next conversation to wait gets it
        item = later.queue.get_nowait()
        assert item.error is not None and "must be a JSON object" in item.error
        assert "while no conversation was waiting" in item.error
        # A message to a person whose conversation has ended is answered and recorded nowhere.
        graph.close_inbox(a)
        ended = {"messaging_product": "whatsapp", "to": a.who.wa_id, "type": "text", "text": {"body": "bye"}}
        assert (await _call(graph, ended)).status_code == 200
        assert b.queue.empty() and later.queue.empty()
    finally:
        await graph.aclose()


async def test_a_bot_that_calls_nothing_times_out_with_a_hint_that_says_so(tmp_path: Any) -> None:
    async for channel in channel_for(lambda m, b: [], tmp_path, verify=False, timeout_s=0.3):
        session = await channel.factory.open("run/mute#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "timeout"
        assert "no call for this conversation reached the local Graph API" in str(caught.value)
