"""Planted WhatsApp bots for the channel tests: an aiohttp webhook service on loopback, written against the
public Cloud API shapes, whose replies a test scripts. It keeps everything it received (webhook events,
status callbacks, signature checks, the Graph API's answers) so a test can check both sides.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from aiohttp import web

from simulator.bots.whatsapp import WhatsAppBotFactory
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from tests.support.waiting import LATE_S, eventually

# bot.quiet_s for the tests' bots: past their gaps between the messages of one turn (up to 0.2 s, the time to
# send included) by what a busy machine may add to a gap, so a message late on a loaded machine never opens
# the next turn.
QUIET_S = 0.2 + LATE_S


@dataclass
class RawCall:
    """A Graph API call made exactly as given (a malformed one): `path` may hold {version} and {number}."""

    method: str = "POST"
    path: str = "/{version}/{number}/messages"
    content: bytes | None = None
    json: Any = None
    token: str | None = None  # None: the bot's access token


# A script: given the incoming message (the webhook's messages[0]) and the bot, the (delay_s, body) pairs
# to send; each body is a send-API body without messaging_product and the address (`to`, `recipient` or both,
# as the bot's `address` says), or a RawCall.
Script = Callable[[dict[str, Any], "PlantedBot"], list[tuple[float, Any]]]

BUTTONS = {
    "type": "interactive",
    "interactive": {
        "type": "button",
        "body": {"text": "Does the pain spread to your arm or jaw?"},
        "action": {
            "buttons": [
                {"type": "reply", "reply": {"id": "yes", "title": "Yes"}},
                {"type": "reply", "reply": {"id": "no", "title": "No"}},
            ]
        },
    },
}
LIST = {
    "type": "interactive",
    "interactive": {
        "type": "list",
        "body": {"text": "Where would you like to be seen?"},
        "action": {
            "button": "Choose a place",
            "sections": [
                {
                    "title": "Appointments",
                    "rows": [{"id": "gp", "title": "GP tomorrow", "description": "a booked slot"}],
                },
                {"title": "Today", "rows": [{"id": "pharmacy", "title": "Pharmacy today"}]},
            ],
        },
    },
}


def text(body: str) -> dict[str, Any]:
    return {"type": "text", "text": {"body": body}}


@dataclass
class PlantedBot:
    """The bot's configuration and what it saw."""

    script: Script
    app_secret: str = "app-secret-123"
    access_token: str = "access-token-456"
    verify_token: str = "verify-token-789"
    api_url: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    bad_signatures: int = 0
    graph_answers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    fail_statuses: bool = False
    address: str = "to"  # how replies are addressed: "to" (the wa_id), "recipient" (the BSUID) or "both"
    fetch_media: bool = False  # fetch each image/audio a user sends (its URL, then its bytes) before replying
    media_fetched: list[dict[str, Any]] = field(default_factory=list)
    version: str = "v21.0"
    url: str = ""
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def _webhook(self, request: web.Request) -> web.Response:
        raw = await request.read()
        expected = "sha256=" + hmac.new(self.app_secret.encode(), raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(request.headers.get("X-Hub-Signature-256", ""), expected):
            self.bad_signatures += 1
            return web.Response(status=403, text="invalid signature")
        event = json.loads(raw)
        value = event["entry"][0]["changes"][0]["value"]
        if "statuses" in value:
            self.statuses.extend(value["statuses"])
            return web.Response(status=500 if self.fail_statuses else 200)
        self.events.append(event)
        task = asyncio.create_task(self._reply(value))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return web.Response(text="EVENT_RECEIVED")

    async def _verify(self, request: web.Request) -> web.Response:
        query = request.query
        if query.get("hub.mode") == "subscribe" and query.get("hub.verify_token") == self.verify_token:
            return web.Response(text=query.get("hub.challenge", ""))
        return web.Response(status=403)

    async def _fetch(self, client: httpx.AsyncClient, media_id: str) -> None:
        """A media file fetched as the Cloud API serves it: the URL from the Graph API, then the bytes."""
        auth = {"Authorization": f"Bearer {self.access_token}"}
        info = (await client.get(f"{self.api_url}/{self.version}/{media_id}", headers=auth)).json()
        data = (await client.get(info["url"], headers=auth)).content
        digest = hashlib.sha256(data).hexdigest()
        self.media_fetched.append({"info": info, "data": data, "sha256_ok": digest == info["sha256"]})

    def _address(self, value: dict[str, Any]) -> dict[str, Any]:
        contact = value["contacts"][0]
        address = {"to": contact["wa_id"], "recipient": contact["user_id"]}
        return address if self.address == "both" else {self.address: address[self.address]}

    async def _reply(self, value: dict[str, Any]) -> None:
        message = value["messages"][0]
        number = value["metadata"]["phone_number_id"]
        async with httpx.AsyncClient() as client:
            if self.fetch_media and message["type"] in ("image", "audio"):
                await self._fetch(client, message[message["type"]]["id"])
            for delay, body in self.script(message, self):
                await asyncio.sleep(delay)
                if isinstance(body, RawCall):
                    response = await client.request(
                        body.method,
                        self.api_url + body.path.format(version=self.version, number=number),
                        content=body.content,
                        json=body.json,
                        headers={"Authorization": f"Bearer {body.token or self.access_token}"},
                    )
                else:
                    full = {
                        "messaging_product": "whatsapp",
                        "recipient_type": "individual",
                        **self._address(value),
                        **body,
                    }
                    response = await client.post(
                        f"{self.api_url}/{self.version}/{number}/messages",
                        json=full,
                        headers={"Authorization": f"Bearer {self.access_token}"},
                    )
                try:
                    answer = response.json()
                except ValueError:
                    answer = {"text": response.text}
                self.graph_answers.append((response.status_code, answer))


async def serve(bot: PlantedBot) -> Callable[[], Awaitable[None]]:
    """Serve the bot's webhook on a free loopback port (sets `bot.url`); returns the stop function."""
    app = web.Application()
    app.router.add_post("/webhook", bot._webhook)
    app.router.add_get("/webhook", bot._verify)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    bot.url = f"http://127.0.0.1:{port}/webhook"

    async def stop() -> None:
        for task in list(bot._tasks):
            task.cancel()
        await runner.cleanup()

    return stop


class Channel:
    """A planted bot and the adapter's factory pointed at it."""

    def __init__(self, bot: PlantedBot, factory: WhatsAppBotFactory) -> None:
        self.bot = bot
        self.factory = factory


async def channel_for(script: Script, tmp_path: Any, **config: Any) -> AsyncIterator[Channel]:
    """A planted bot served on loopback and the adapter's factory pointed at it (started, then closed).
    `address` (in config) says how the bot addresses its replies."""
    bot = PlantedBot(
        script, address=config.pop("address", "to"), fetch_media=config.pop("fetch_media", False)
    )
    stop = await serve(bot)
    record_raw = bool(config.pop("record_raw", True))
    settings = {"quiet_s": QUIET_S, **config}
    factory = WhatsAppBotFactory(
        WhatsAppBotConfig(webhook_url=bot.url, **settings), tmp_path, record_raw=record_raw
    )
    bot.api_url = factory.graph.url
    try:
        await factory.start()
        yield Channel(bot, factory)
    finally:
        await factory.aclose()
        await stop()


async def answers(bot: PlantedBot, count: int) -> list[tuple[int, dict[str, Any]]]:
    """The Graph API's answers the bot has received, once there are `count` (the engine may have ended the
    turn before the answer reached the bot)."""
    await eventually(lambda: len(bot.graph_answers) >= count, f"{count} Graph API answers")
    return bot.graph_answers
