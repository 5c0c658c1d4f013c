"""The local Graph API the bot under test sends its WhatsApp messages to (loopback only).

`POST /{version}/{phone-number-id}/messages` with `Authorization: Bearer <access token>`: a valid message
is answered as the Cloud API does (`{messaging_product, contacts: [{input, wa_id}], messages: [{id}]}`)
and delivered to the conversation whose user it is addressed to (by `to`: the wa_id or the BSUID); a
message that breaks a Cloud API rule gets the API's 400 error and is delivered to that conversation as a
bot error naming the rule; a wrong or missing token gets 401 and a bot error too. A "mark as read" call
(`status: read`, `message_id`) is answered `{success: true}` and recorded as a note; a media upload
(`POST /{version}/{phone-number-id}/media`) gets a media id; any other call is a bot error naming it.
"""

from __future__ import annotations

__all__ = ["GraphApi", "Inbox", "Outbound"]

import asyncio
import hmac
import json
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from simulator.bots.whatsapp.events import Identity, new_message_id
from simulator.bots.whatsapp.rules import RuleBroken, message_parts
from simulator.record.parts import Part


@dataclass
class Outbound:
    """One thing the bot did through the Graph API: a message it sent (its parts, body and id), a note
    (marked a message read), or an error (`kind`, `message`)."""

    at: float
    parts: list[Part] = field(default_factory=list)
    body: dict[str, Any] | None = None
    message_id: str | None = None
    error_kind: str | None = None
    error: str | None = None
    note: str | None = None


class Inbox:
    """What the bot sent one simulated user, in arrival order."""

    def __init__(self, who: Identity) -> None:
        self.who = who
        self.queue: asyncio.Queue[Outbound] = asyncio.Queue()


def _graph_error(status: int, code: int, message: str, details: str | None = None) -> web.Response:
    error: dict[str, Any] = {
        "message": message,
        "type": "OAuthException",
        "code": code,
        "fbtrace_id": "simulator",
    }
    if details:
        error["error_data"] = {"messaging_product": "whatsapp", "details": details}
    return web.json_response({"error": error}, status=status)


class GraphApi:
    """The Graph API server: one per run, routing each message to its conversation's inbox."""

    def __init__(self, token: str, phone_number_id: str) -> None:
        self._token = token
        self._phone_number_id = phone_number_id
        self._inboxes: dict[str, Inbox] = {}
        self._by_message: dict[str, Inbox] = {}  # inbound message ids, for "mark as read"
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._runner: web.AppRunner | None = None
        self.stray: list[str] = []  # calls no conversation could be found for

    async def start(self) -> None:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post("/{version}/{phone_number_id}/messages", self._messages)
        app.router.add_post("/{version}/{phone_number_id}/media", self._media)
        app.router.add_route("*", "/{tail:.*}", self._elsewhere)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._socket).start()

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._socket.close()

    def open_inbox(self, who: Identity) -> Inbox:
        inbox = Inbox(who)
        self._inboxes[who.wa_id] = self._inboxes[who.user_id] = inbox
        return inbox

    def close_inbox(self, inbox: Inbox) -> None:
        for key in (inbox.who.wa_id, inbox.who.user_id):
            self._inboxes.pop(key, None)
        for message_id in [m for m, box in self._by_message.items() if box is inbox]:
            del self._by_message[message_id]

    def note_inbound(self, message_id: str, inbox: Inbox) -> None:
        self._by_message[message_id] = inbox

    def _authorised(self, request: web.Request) -> bool:
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self._token}".encode())

    def _inbox_of(self, body: Any) -> Inbox | None:
        if not isinstance(body, dict):
            return None
        if isinstance(body.get("to"), str):
            return self._inboxes.get(body["to"].lstrip("+"))
        if isinstance(body.get("message_id"), str):
            return self._by_message.get(body["message_id"])
        return None

    async def _messages(self, request: web.Request) -> web.Response:
        # long because it is the one endpoint's checks in the Cloud API's order: auth, number, body, rules
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        inbox = self._inbox_of(body)
        now = time.perf_counter()
        if not self._authorised(request):
            self._deliver(
                inbox,
                Outbound(
                    now,
                    error_kind="auth",
                    error="the bot called the Graph API without the right bearer token (Authorization: Bearer "
                    "<the access token>); the Cloud API answers 401 and sends nothing",
                ),
            )
            return _graph_error(401, 190, "Invalid OAuth access token - Cannot parse access token")
        number = request.match_info["phone_number_id"]
        if number != self._phone_number_id:
            self._deliver(
                inbox,
                Outbound(
                    now,
                    error_kind="cloud_api_rule",
                    error=f"the bot sent from phone number id {number}, but the webhook's metadata.phone_number_id "
                    f"is {self._phone_number_id}; reply from the number the message came to",
                ),
            )
            return _graph_error(
                400, 100, f"Unsupported post request. Object with ID '{number}' does not exist"
            )
        if not isinstance(body, dict):
            self._deliver(
                inbox,
                Outbound(now, error_kind="cloud_api_rule", error="the request body is not a JSON object"),
            )
            return _graph_error(400, 100, "Invalid parameter", "the request body must be a JSON object")
        if body.get("status") == "read" and "to" not in body:
            self._deliver(inbox, Outbound(now, note=f"marked {body.get('message_id')} read"))
            return web.json_response({"success": True})
        if inbox is None:
            self.stray.append(f"a message to {body.get('to')!r}, who is no conversation's user")
            return _graph_error(
                400, 131030, "Recipient phone number not in allowed list", "unknown recipient"
            )
        try:
            parts = message_parts(body)
        except RuleBroken as exc:
            self._deliver(
                inbox,
                Outbound(
                    now,
                    body=body,
                    error_kind="cloud_api_rule",
                    error=f"the bot sent a message the WhatsApp Cloud API refuses: {exc.field} {exc.rule}",
                ),
            )
            return _graph_error(
                400, 131009, "(#131009) Parameter value is not valid", f"{exc.field} {exc.rule}"
            )
        message_id = new_message_id()
        self._deliver(inbox, Outbound(now, parts=parts, body=body, message_id=message_id))
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": body["to"], "wa_id": inbox.who.wa_id}],
                "messages": [{"id": message_id}],
            }
        )

    async def _media(self, request: web.Request) -> web.Response:
        """A media upload: answered with a media id (the bytes are read and dropped, never stored)."""
        await request.read()
        if not self._authorised(request):
            self.stray.append("a media upload without the right bearer token")
            return _graph_error(401, 190, "Invalid OAuth access token - Cannot parse access token")
        return web.json_response({"id": str(secrets.randbelow(10**15) + 10**15)})

    async def _elsewhere(self, request: web.Request) -> web.Response:
        """Any other call: an error for the conversation it names (by `to`), so the run says what the bot
        called instead of waiting for a message that never comes."""
        try:
            body = json.loads(await request.read() or b"null")
        except ValueError:
            body = None
        self._deliver(
            self._inbox_of(body),
            Outbound(
                time.perf_counter(),
                error_kind="cloud_api_rule",
                error=f"the bot called {request.method} {request.path}, which the local Graph API does not "
                "serve; send messages with POST /{version}/{phone-number-id}/messages",
            ),
        )
        return _graph_error(404, 100, f"Unknown path components: {request.path}")

    def _deliver(self, inbox: Inbox | None, item: Outbound) -> None:
        if inbox is None:
            self.stray.append(item.error or item.note or "a call no conversation could be found for")
            return
        inbox.queue.put_nowait(item)
