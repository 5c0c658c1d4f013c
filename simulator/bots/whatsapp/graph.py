"""The local Graph API the bot under test sends its WhatsApp messages to (loopback only).

Served as the Cloud API serves them, each with `Authorization: Bearer <access token>`:
- `POST /{version}/{phone-number-id}/messages`: a message, addressed by `to` (the phone number) or `recipient`
  (the business-scoped user id, Graph API v26); answered `{messaging_product, contacts: [{input, wa_id}] or
  [{input, user_id}], messages: [{id}]}` as the real API answers, and delivered to that conversation. A "mark as
  read" (`status: read`, `message_id`, optionally `typing_indicator`) is answered `{success: true}` and noted.
- `POST /{version}/{phone-number-id}/media`: an upload, answered with a media id (the bytes are dropped).
- `GET /{version}/{media-id}`: the URL, type, sha256 and size of a file a simulated user sent (media.py), and
  `GET` that URL: its bytes.

Every call the Cloud API would refuse (no or a wrong token, another phone number id, a body that is not a JSON
object or is too large, an address no user of this run has, a message breaking a rule of rules.py, an unknown
media id, a path the API does not serve) gets the API's error answer, **and** is delivered at once as a bot error
naming the field and the rule: to the conversation the call names, or, when it names none, to the conversations
waiting for the bot (routing.py). One middleware does this for every route, so no refusal can be left unrecorded
and turn into a "no message" timeout.
"""

from __future__ import annotations

__all__ = ["GraphApi", "Inbox", "Outbound"]

import hmac
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from simulator.bots.whatsapp.events import Identity, new_message_id
from simulator.bots.whatsapp.fields import RuleBroken
from simulator.bots.whatsapp.media import MediaFile, MediaStore
from simulator.bots.whatsapp.routing import Address, Directory, Inbox, Outbound
from simulator.bots.whatsapp.rules import check_address, message_parts
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.record.parts import MediaPart

MAX_BODY_BYTES = 4 * 1024 * 1024
_VERSION = r"{version:v[0-9]+\.[0-9]+}"
DOWNLOAD_PATH = "/whatsapp_business/attachments/"


class Refused(Exception):
    """A call the Cloud API refuses: its HTTP answer (status, Graph error code, message, details) and the bot
    error the conversation records (`kind`, `error`)."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        error: str,
        *,
        kind: str = "cloud_api_rule",
        details: str = "",
    ) -> None:
        super().__init__(error)
        self.status, self.code, self.message, self.details = status, code, message, details
        self.kind, self.error = kind, error


def _rule(exc: RuleBroken) -> Refused:
    return Refused(
        400,
        131009,
        "(#131009) Parameter value is not valid",
        f"the bot sent a message the WhatsApp Cloud API refuses: {exc.field} {exc.rule}",
        details=f"{exc.field} {exc.rule}",
    )


@dataclass
class GraphCall:
    """One request to the local Graph API, read once by the middleware: its body and the conversation it names."""

    method: str
    path: str
    body: Any = None
    unreadable: str | None = None
    address: Address = field(default_factory=lambda: Address(None, "none"))

    def body_dict(self) -> dict[str, Any] | None:
        return self.body if isinstance(self.body, dict) else None


CALL = web.RequestKey("call", GraphCall)


def _graph_error(refusal: Refused) -> web.Response:
    error: dict[str, Any] = {
        "message": refusal.message,
        "type": "OAuthException",
        "code": refusal.code,
        "fbtrace_id": "simulator",
    }
    if refusal.details:
        error["error_data"] = {"messaging_product": "whatsapp", "details": refusal.details}
    return web.json_response({"error": error}, status=refusal.status)


class GraphApi:
    """The Graph API server: one per run, routing each call to its conversation's inbox."""

    def __init__(self, token: str, phone_number_id: str, templates: dict[str, str] | None = None) -> None:
        self._token = token
        self._phone_number_id = phone_number_id
        self._templates = templates or {}  # the suite's template texts by name (bot.templates)
        self.directory = Directory()
        self.media = MediaStore()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[self._guard])
        app.router.add_post(f"/{_VERSION}/{{phone_number_id}}/messages", self._messages)
        app.router.add_post(f"/{_VERSION}/{{phone_number_id}}/media", self._upload)
        app.router.add_get(f"/{_VERSION}/{{media_id}}", self._media_url)
        app.router.add_get(DOWNLOAD_PATH, self._download)
        app.router.add_route("*", "/{tail:.*}", self._elsewhere)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._socket).start()

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._socket.close()

    def open_inbox(self, who: Identity, limit: int = 1_000) -> Inbox:
        return self.directory.open(who, limit)

    def close_inbox(self, inbox: Inbox) -> None:
        self.directory.close(inbox)
        self.media.drop(inbox)

    def note_inbound(self, message_id: str, inbox: Inbox) -> None:
        self.directory.note_message(message_id, inbox)

    def add_user_media(self, inbox: Inbox, part: MediaPart) -> MediaFile:
        """Store a user's photo or voice note for the webhook that names it (media.py)."""
        return self.media.add(inbox, part)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Read the call once, check the token, run the route; every refusal (and any fault here) is answered
        as the Cloud API answers and recorded for the conversation it concerns."""
        call = await self._read(request)
        request[CALL] = call
        inbox = call.address.inbox
        if inbox is not None:  # the turn's end waits for it (adapter.py, `turn_end`)
            inbox.in_flight += 1
        try:
            if not self._authorised(request):
                raise Refused(
                    401,
                    190,
                    "Invalid OAuth access token - Cannot parse access token",
                    f"the bot called {call.method} {call.path} without the right bearer token (Authorization: "
                    "Bearer <the access token>); the Cloud API answers 401 and does nothing",
                    kind="auth",
                )
            if call.unreadable is not None:
                raise Refused(400, 100, "Invalid parameter", call.unreadable, details=call.unreadable)
            response: web.StreamResponse = await handler(request)
            return response
        except Refused as refusal:
            self.directory.deliver(
                call.address.inbox,
                Outbound(
                    time.perf_counter(), body=call.body_dict(), error_kind=refusal.kind, error=refusal.error
                ),
            )
            return _graph_error(refusal)
        except Exception:  # a fault of the local Graph API itself: recorded, never a silent timeout
            fault = (
                f"the local Graph API failed on {call.method} {call.path}; this is a fault of the simulator, "
                "not of the bot: please report it"
            )
            self.directory.deliver(
                call.address.inbox, Outbound(time.perf_counter(), error_kind="engine", error=fault)
            )
            return _graph_error(Refused(500, 1, "An unknown error occurred", fault))
        finally:
            if inbox is not None:
                inbox.in_flight -= 1

    async def _read(self, request: web.Request) -> GraphCall:
        call = GraphCall(request.method, request.path)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            call.unreadable = (
                f"the request body is over {MAX_BODY_BYTES // (1024 * 1024)} MB; the Graph API refuses it"
            )
            return call
        if raw and not request.content_type.startswith("multipart/"):  # an upload is a form, not JSON
            try:
                call.body = loads_bounded(raw, "the request body")
            except JSONRefused as exc:
                call.unreadable = None if request.method == "GET" else str(exc)
        call.address = self.directory.address(call.body)
        media_id = request.match_info.get("media_id") or request.query.get("mid")
        stored = self.media.get(media_id) if media_id else None
        if stored is not None:  # a media call belongs to the conversation the file was sent in
            call.address = Address(stored.owner, "media_id", stored.media_id)
        return call

    def _authorised(self, request: web.Request) -> bool:
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self._token}".encode())

    def _check_number(self, request: web.Request) -> None:
        number = request.match_info["phone_number_id"]
        if number != self._phone_number_id:
            raise Refused(
                400,
                100,
                f"Unsupported post request. Object with ID '{number}' does not exist",
                f"the bot called phone number id {number}, but the webhook's metadata.phone_number_id is "
                f"{self._phone_number_id}; reply from the number the message came to",
            )

    async def _messages(self, request: web.Request) -> web.Response:
        """A message or a read receipt, in the Cloud API's order of checks: number, body, address, rules."""
        call = request[CALL]
        self._check_number(request)
        body = call.body_dict()
        if body is None:
            raise Refused(
                400, 100, "Invalid parameter", "the request body must be a JSON object (a send-API message)"
            )
        if body.get("status") == "read":
            return self._read_receipt(call, body)
        try:
            check_address(body)
        except RuleBroken as exc:
            raise _rule(exc) from None
        address = call.address
        named = "to" if body.get("to") is not None else "recipient"
        if address.by != named and not address.ended:  # `to` wins over `recipient`, as in the Cloud API
            given = body.get(named)
            raise Refused(
                400,
                131030,
                "Recipient phone number not in allowed list",
                f"the bot sent a message the WhatsApp Cloud API refuses: {named} {given!r} is no user of this "
                f"run (the API answers 131030); reply to the webhook's contacts[0]."
                f"{'wa_id' if named == 'to' else 'user_id'}",
                details=f"{named}: unknown recipient",
            )
        try:
            parts = message_parts(body, self._templates)
        except RuleBroken as exc:
            raise _rule(exc) from None
        message_id = new_message_id()
        if (
            address.inbox is not None
        ):  # none: the person's conversation has ended; answered, nothing to record
            self.directory.note_message(message_id, address.inbox)
            self.directory.deliver(
                address.inbox, Outbound(time.perf_counter(), parts=parts, body=body, message_id=message_id)
            )
        contact: dict[str, str] = {"input": str(address.given)}
        if address.inbox is not None:
            who = address.inbox.who
            contact.update({"wa_id": who.wa_id} if address.by == "to" else {"user_id": who.user_id})
        return web.json_response(
            {"messaging_product": "whatsapp", "contacts": [contact], "messages": [{"id": message_id}]}
        )

    def _read_receipt(self, call: GraphCall, body: dict[str, Any]) -> web.Response:
        """`{status: read, message_id}` (with `typing_indicator: {type: text}` it also shows typing)."""
        message_id = body.get("message_id")
        if call.address.by != "message_id":
            raise Refused(
                400,
                100,
                "Invalid parameter",
                f"the bot marked message_id {str(message_id)[:60]!r} read, which names no message it received "
                "in this run; mark the webhook's messages[0].id",
                details="message_id: unknown message",
            )
        typing = body.get("typing_indicator")
        if typing is not None and not (isinstance(typing, dict) and typing.get("type") == "text"):
            raise Refused(
                400,
                131009,
                "(#131009) Parameter value is not valid",
                'the bot sent a message the WhatsApp Cloud API refuses: typing_indicator must be {"type": "text"}',
                details="typing_indicator.type must be 'text'",
            )
        note = f"marked {message_id} read" + (" and showed the typing indicator" if typing else "")
        self.directory.deliver(
            call.address.inbox, Outbound(time.perf_counter(), note=note, typing=typing is not None)
        )
        return web.json_response({"success": True})

    async def _upload(self, request: web.Request) -> web.Response:
        """A media upload: answered with a media id (the bytes are read and dropped, never stored)."""
        self._check_number(request)
        return web.json_response({"id": str(secrets.randbelow(9 * 10**15) + 10**15)})

    def _stored(self, call: GraphCall, media_id: str, what: str) -> MediaFile:
        stored = self.media.get(media_id)
        if stored is None:
            raise Refused(
                400 if what == "url" else 404,
                100,
                f"Unsupported get request. Object with ID '{media_id}' does not exist",
                f"the bot asked for media {media_id[:40]!r} ({call.method} {call.path}), which no open conversation "
                "of this run sent; use the id in the webhook's image/audio message",
            )
        call.address = Address(stored.owner, "media_id", media_id)
        return stored

    async def _media_url(self, request: web.Request) -> web.Response:
        """`GET /{version}/{media-id}`: where to download a user's media file, and what it is."""
        call = request[CALL]
        stored = self._stored(call, request.match_info["media_id"], "url")
        self.directory.deliver(
            stored.owner, Outbound(time.perf_counter(), note=f"asked for media {stored.media_id}")
        )
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "url": f"{self.url}{DOWNLOAD_PATH}?mid={stored.media_id}&key={stored.key}",
                "mime_type": stored.mime_type,
                "sha256": stored.sha256,
                "file_size": len(stored.data),
                "id": stored.media_id,
            }
        )

    async def _download(self, request: web.Request) -> web.Response:
        """The bytes at a media URL (the bearer token checked, as the Cloud API's media URLs require)."""
        call = request[CALL]
        stored = self._stored(call, request.query.get("mid", ""), "bytes")
        if not hmac.compare_digest(request.query.get("key", ""), stored.key):
            raise Refused(
                404,
                100,
                "Not found",
                f"the bot fetched {call.path} with a key the media URL it was given did not have",
            )
        self.directory.deliver(
            stored.owner, Outbound(time.perf_counter(), note=f"downloaded media {stored.media_id}")
        )
        return web.Response(body=stored.data, content_type=stored.mime_type)

    async def _elsewhere(self, request: web.Request) -> web.Response:
        """Any other call: a bot error naming what the bot called, so the run never waits for it."""
        call = request[CALL]
        raise Refused(
            404,
            100,
            f"Unknown path components: {call.path}",
            f"the bot called {call.method} {call.path}, which the local Graph API does not serve; send messages "
            "with POST /{version}/{phone-number-id}/messages (version such as v26.0)",
        )
