"""The whatsapp adapter against planted webhook bots on loopback: signed webhooks in, the local Graph API
out, the Cloud API's rules, status callbacks, the bearer token, the end of a turn and its latency."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from simulator.bots.base import BotError
from simulator.bots.whatsapp import WhatsAppBotFactory
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from simulator.errors import UserError
from simulator.record.parts import MediaPart, OptionsPart, PickPart, TextPart
from simulator.record.redact import forget_secrets
from tests._whatsapp_bots import BUTTONS, LIST, PlantedBot, answers, channel_for, text
from tests.support.waiting import LATE_S


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHATSAPP_APP_SECRET", "app-secret-123")
    monkeypatch.setenv("WHATSAPP_ACCESS_TOKEN", "access-token-456")
    monkeypatch.setenv("WHATSAPP_VERIFY_TOKEN", "verify-token-789")
    yield
    forget_secrets()


def _flow(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, dict[str, Any]]]:
    """Text -> a greeting and the list; a list row -> the buttons; a button -> the advice."""
    interactive = message.get("interactive", {})
    if interactive.get("type") == "list_reply":
        return [(0.0, BUTTONS)]
    if interactive.get("type") == "button_reply":
        return [(0.0, text("Please call 999 now."))]
    return [(0.0, text("Hello, I'm the triage helper.")), (0.05, LIST)]


async def test_buttons_and_list_round_trip_with_the_ids_tapped(tmp_path: Any) -> None:
    async for channel in channel_for(_flow, tmp_path, verify=False):
        session = await channel.factory.open("run/a#0/1")
        first = await session.send("hi, chest pain", 0)
        assert first.raw is not None and first.raw["end"] == "interactive"
        assert isinstance(first.parts[0], TextPart) and first.parts[0].text == "Hello, I'm the triage helper."
        offered = first.parts[2]
        assert (
            isinstance(offered, OptionsPart)
            and offered.style == "list"
            and offered.button == "Choose a place"
        )
        assert [(o.id, o.section) for o in offered.options] == [("gp", "Appointments"), ("pharmacy", "Today")]
        list_id = first.raw["messages"][1]["id"]  # the id the Graph API gave the list message

        second = await session.send("GP tomorrow", 1, pick=PickPart(id="gp", title="GP tomorrow"))
        tapped = channel.bot.events[1]["entry"][0]["changes"][0]["value"]["messages"][0]
        assert tapped["type"] == "interactive"
        assert tapped["interactive"] == {
            "type": "list_reply",
            "list_reply": {"id": "gp", "title": "GP tomorrow", "description": "a booked slot"},
        }
        assert tapped["context"]["id"] == list_id
        buttons = second.parts[-1]
        assert isinstance(buttons, OptionsPart) and buttons.style == "buttons"
        assert [o.title for o in buttons.options] == ["Yes", "No"]

        third = await session.send("Yes", 2, pick=PickPart(id="yes", title="Yes"))
        tapped = channel.bot.events[2]["entry"][0]["changes"][0]["value"]["messages"][0]
        assert tapped["interactive"] == {
            "type": "button_reply",
            "button_reply": {"id": "yes", "title": "Yes"},
        }
        assert third.messages == ["Please call 999 now."] and third.raw["end"] == "quiet"
        # The webhook looks like Meta's: the business's number, the contact with wa_id and BSUID.
        value = channel.bot.events[0]["entry"][0]["changes"][0]["value"]
        assert channel.bot.events[0]["object"] == "whatsapp_business_account"
        assert value["metadata"]["phone_number_id"] == "106540352242922"
        contact = value["contacts"][0]
        assert contact["wa_id"] == value["messages"][0]["from"] and contact["user_id"].startswith("GB.")
        assert value["messages"][0]["id"].startswith("wamid.") and value["messages"][0]["timestamp"].isdigit()
        assert channel.bot.bad_signatures == 0


def _many_buttons(n: int, title: str = "Option") -> dict[str, Any]:
    buttons = [{"type": "reply", "reply": {"id": f"b{i}", "title": f"{title} {i}"}} for i in range(n)]
    return {
        "type": "interactive",
        "interactive": {"type": "button", "body": {"text": "Pick"}, "action": {"buttons": buttons}},
    }


def _rows(counts: list[int]) -> dict[str, Any]:
    sections = [
        {"title": f"Section {s}", "rows": [{"id": f"r{s}-{r}", "title": f"Row {r}"} for r in range(n)]}
        for s, n in enumerate(counts)
    ]
    return {
        "type": "interactive",
        "interactive": {
            "type": "list",
            "body": {"text": "Pick"},
            "action": {"button": "Open", "sections": sections},
        },
    }


WRONG = [
    (_many_buttons(4), "interactive.action.buttons takes 1 to 3 reply buttons; the bot sent 4"),
    (
        _many_buttons(2, "A title far too long"),
        "interactive.action.buttons[0].reply.title is at most 20 characters",
    ),
    (_rows([11]), "interactive.action.sections[0].rows takes 1 to 10 rows; the bot sent 11"),
    (_rows([6, 6]), "interactive.action.sections[].rows take 10 rows in all; the bot sent 12"),
    (
        {"type": "interactive", "interactive": {"type": "button", "action": {"buttons": []}}},
        "interactive.body is required",
    ),
    ({"type": "carousel", "carousel": {}}, "type must be one of text, interactive"),
    ({"type": "text", "text": {}}, "text.body is required"),
    ({"type": "image", "image": {"caption": "x"}}, "image needs exactly one of 'id'"),
]


@pytest.mark.parametrize(
    ("body", "rule"), WRONG, ids=[r.split(" ")[0] + str(i) for i, (_, r) in enumerate(WRONG)]
)
async def test_a_message_breaking_a_cloud_api_rule_is_a_bot_error_naming_the_rule(
    tmp_path: Any, body: dict[str, Any], rule: str
) -> None:
    async for channel in channel_for(lambda m, b: [(0.0, body)], tmp_path, verify=False):
        session = await channel.factory.open("run/rules#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "cloud_api_rule"
        assert rule in str(caught.value) and "the WhatsApp Cloud API refuses" in str(caught.value)
        status, answer = (await answers(channel.bot, 1))[0]
        assert status == 400 and answer["error"]["code"] == 131009  # the bot saw the API's refusal too


async def test_the_engine_signs_every_webhook_and_a_bot_with_another_secret_refuses_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WHATSAPP_APP_SECRET", "not-the-bots-secret")
    async for channel in channel_for(_flow, tmp_path, verify=False):
        session = await channel.factory.open("run/sig#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "http_status" and "HTTP 403" in str(caught.value)
        assert "X-Hub-Signature-256" in str(caught.value)
        assert channel.bot.bad_signatures == 1 and channel.bot.events == []


async def test_the_verification_handshake_is_played_and_a_wrong_token_is_one_clear_error(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    async for channel in channel_for(_flow, tmp_path):  # verify: true, the default: played at start
        challenge = await channel.factory.verify()
        assert challenge.isdigit()
    monkeypatch.setenv("WHATSAPP_VERIFY_TOKEN", "another-token")
    with pytest.raises(UserError, match=r"failed the webhook verification handshake.*HTTP 403"):
        async for _ in channel_for(_flow, tmp_path):
            pass


async def test_a_wrong_bearer_token_gets_401_and_is_a_bot_error(tmp_path: Any) -> None:
    def script(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, dict[str, Any]]]:
        bot.access_token = "a-stale-token"
        return [(0.0, text("hello"))]

    async for channel in channel_for(script, tmp_path, verify=False):
        session = await channel.factory.open("run/token#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "auth" and "bearer token" in str(caught.value)
        assert "access-token-456" not in str(caught.value) and "a-stale-token" not in str(caught.value)
        assert (await answers(channel.bot, 1))[0][0] == 401


async def test_status_callbacks_are_posted_for_each_message_in_order(tmp_path: Any) -> None:
    def script(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, dict[str, Any]]]:
        return [(0.0, text("one")), (0.0, {"type": "image", "image": {"id": "1479", "caption": "map"}})]

    async for channel in channel_for(script, tmp_path, verify=False, statuses=["sent", "delivered", "read"]):
        session = await channel.factory.open("run/status#0/1")
        reply = await session.send("hello", 0)
        ids = [answer["messages"][0]["id"] for _, answer in await answers(channel.bot, 2)]
        assert [(s["id"], s["status"]) for s in channel.bot.statuses] == [
            (i, status) for i in ids for status in ("sent", "delivered", "read")
        ]
        assert all(s["recipient_id"] == session.who.wa_id for s in channel.bot.statuses)
        assert isinstance(reply.parts[1], MediaPart) and reply.parts[1].ref == "1479"
        assert reply.parts[1].caption == "map" and reply.raw is not None and len(reply.raw["statuses"]) == 6
        channel.bot.fail_statuses = True
        with pytest.raises(BotError, match="HTTP 500 to the 'sent' status callback"):
            await session.send("again", 1)


async def test_a_slow_bot_sending_three_messages_over_4_s_is_one_turn_with_its_latency(tmp_path: Any) -> None:
    def script(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, dict[str, Any]]]:
        return [(0.3, text("Let me check.")), (1.8, text("Still checking.")), (1.9, text("Done."))]

    # Quiet for longer than its longest gap (1.9 s), by what a busy machine may add to it.
    async for channel in channel_for(script, tmp_path, verify=False, quiet_s=1.9 + LATE_S):
        session = await channel.factory.open("run/slow#0/1")
        reply = await session.send("hello", 0)
        assert reply.messages == ["Let me check.", "Still checking.", "Done."]
        assert reply.raw is not None and reply.raw["end"] == "quiet"
        offsets = [m["at_s"] for m in reply.raw["messages"]]
        assert offsets == sorted(offsets) and offsets[-1] >= 3.9  # the last came about 4 s after the webhook
        assert 0.3 <= reply.latency_s < offsets[1]  # latency: the webhook delivery to the first message


async def test_a_bot_that_sends_nothing_is_a_timeout_and_a_missing_secret_names_its_variable(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2 s: the webhook's own answer, late on a busy machine, must not use up the turn.
    async for channel in channel_for(lambda m, b: [], tmp_path, verify=False, timeout_s=2 * LATE_S):
        session = await channel.factory.open("run/mute#0/1")
        with pytest.raises(BotError, match=r"sent no message within 2 s") as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "timeout"
    monkeypatch.delenv("WHATSAPP_ACCESS_TOKEN")
    with pytest.raises(UserError, match="set the WHATSAPP_ACCESS_TOKEN environment variable"):
        WhatsAppBotFactory(WhatsAppBotConfig(webhook_url="http://127.0.0.1:9/webhook"), tmp_path)


@pytest.mark.parametrize("stall_s", [0.0, 2.2, 3.0], ids=["none", "past-timeout_s", "past-the-turn"])
async def test_a_bot_that_sends_nothing_is_said_so_however_long_the_machine_stalls(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, stall_s: float
) -> None:
    """A busy machine may stall the event loop past both the silence's deadline (timeout_s, 2 s) and the
    turn's own (half a second later) once the webhook is answered: the turn's cancellation then came first,
    and the turn was said to be a bot "still sending" 0 messages. It is silence, said as such."""
    from simulator.bots.whatsapp import adapter

    collect = adapter.WhatsAppSession._collect

    async def stalled(session: Any, *args: Any) -> Any:
        # The whole loop held once the webhook is answered, as a busy machine holds it.
        asyncio.get_running_loop().call_soon(time.sleep, stall_s)
        return await collect(session, *args)

    monkeypatch.setattr(adapter.WhatsAppSession, "_collect", stalled)
    async for channel in channel_for(lambda m, b: [], tmp_path, verify=False, timeout_s=2 * LATE_S):
        session = await channel.factory.open("run/mute#0/1")
        with pytest.raises(BotError, match=r"sent no message within 2 s") as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "timeout" and "still sending" not in str(caught.value)


async def test_without_record_raw_a_turn_keeps_how_it_ended_and_its_timing_only(tmp_path: Any) -> None:
    async for channel in channel_for(_flow, tmp_path, verify=False, record_raw=False):
        session = await channel.factory.open("run/raw#0/1")
        reply = await session.send("hello", 0)
        assert reply.raw is not None and set(reply.raw) == {"end", "quiet_s", "messages"}
        assert reply.raw["end"] == "interactive"
        assert [set(m) for m in reply.raw["messages"]] == [{"at_s", "id"}, {"at_s", "id"}]


async def test_a_call_to_another_graph_path_is_a_bot_error_naming_it(tmp_path: Any) -> None:
    def script(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, dict[str, Any]]]:
        bot.api_url += "/v21.0"  # a doubled version: POST /v21.0/v21.0/{id}/messages
        return [(0.0, text("hello"))]

    async for channel in channel_for(script, tmp_path, verify=False):
        session = await channel.factory.open("run/path#0/1")
        with pytest.raises(BotError, match=r"called POST /v21\.0/v21\.0/106540352242922/messages"):
            await session.send("hello", 0)


async def test_a_media_upload_gets_an_id_with_the_token_and_401_without(tmp_path: Any) -> None:
    import httpx

    async for channel in channel_for(_flow, tmp_path, verify=False):
        url = f"{channel.factory.graph.url}/v21.0/106540352242922/media"
        files = {"file": ("map.png", b"\x89PNG...", "image/png")}
        async with httpx.AsyncClient() as client:
            good = await client.post(
                url,
                files=files,
                data={"messaging_product": "whatsapp"},
                headers={"Authorization": "Bearer access-token-456"},
            )
            bad = await client.post(url, files=files, headers={"Authorization": "Bearer wrong"})
        assert good.status_code == 200 and good.json()["id"].isdigit()
        assert bad.status_code == 401 and bad.json()["error"]["code"] == 190
