"""The webhook events Meta's WhatsApp Cloud API posts to a business's webhook, as the engine plays them.

Shapes (docs/whatsapp.md): every event is `{"object": "whatsapp_business_account", "entry": [{"id": WABA,
"changes": [{"field": "messages", "value": {...}}]}]}`; a message's `value` holds `messaging_product`,
`metadata` {display_phone_number, phone_number_id}, `contacts` [{profile{name}, wa_id, user_id}] and
`messages` [{from, id "wamid.…", timestamp, type, text{body} | interactive{type button_reply{id, title} |
list_reply{id, title, description}} | image{id, mime_type, sha256, caption} | audio{id, mime_type, sha256, voice},
context{from, id} when it answers a message}]; a status's `value` holds
`contacts` [{wa_id, user_id}] and `statuses` [{id, status, timestamp, recipient_id, recipient_user_id,
conversation, pricing}].
Every POST carries `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the app secret>`.
"""

from __future__ import annotations

__all__ = [
    "Identity",
    "WebhookAccount",
    "media_content",
    "message_event",
    "new_message_id",
    "sign",
    "status_event",
    "verification_query",
]

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from simulator.record.parts import Option, PickPart

SIGNATURE_HEADER = "X-Hub-Signature-256"


@dataclass(frozen=True)
class WebhookAccount:
    """The business side of every event: its WhatsApp Business Account and phone number."""

    business_account_id: str
    phone_number_id: str
    display_phone_number: str


@dataclass(frozen=True)
class Identity:
    """One simulated WhatsApp user: a phone number (`wa_id`), a business-scoped user id and a name."""

    wa_id: str
    user_id: str
    name: str

    @classmethod
    def for_conversation(cls, conversation_id: str, name: str, country: str) -> Identity:
        """A stable identity per conversation id: a UK-style mobile number and a BSUID derived from it,
        so two conversations never share a chat on the bot's side."""
        digest = hashlib.sha256(conversation_id.encode()).hexdigest()
        number = "447" + str(int(digest[:12], 16) % 10**9).zfill(9)
        bsuid = f"{country}.{int(digest[12:28], 16) % 10**19:019d}"
        return cls(wa_id=number, user_id=bsuid, name=name)


def new_message_id() -> str:
    """A message id in the Cloud API's form: `wamid.` and base64 text."""
    return "wamid." + base64.b64encode(b"HBgM" + secrets.token_bytes(24)).decode().rstrip("=")


def sign(body: bytes, app_secret: str) -> str:
    """The `X-Hub-Signature-256` header value of a raw body."""
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


def _envelope(account: WebhookAccount, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": account.business_account_id,
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {
                                "display_phone_number": account.display_phone_number,
                                "phone_number_id": account.phone_number_id,
                            },
                            **value,
                        },
                        "field": "messages",
                    }
                ],
            }
        ],
    }


def _content(text: str, pick: PickPart | None, offered: Option | None, style: str | None) -> dict[str, Any]:
    """A text message, or the interactive reply a tap sends: a list row answers `list_reply` (with its
    description), a reply button `button_reply`."""
    if pick is None:
        return {"type": "text", "text": {"body": text}}
    if style == "list":
        reply: dict[str, Any] = {"id": pick.id, "title": pick.title}
        if offered is not None and offered.description:
            reply["description"] = offered.description
        return {"type": "interactive", "interactive": {"type": "list_reply", "list_reply": reply}}
    return {
        "type": "interactive",
        "interactive": {"type": "button_reply", "button_reply": {"id": pick.id, "title": pick.title}},
    }


def media_content(
    kind: str, media_id: str, mime_type: str, sha256: str, caption: str | None
) -> dict[str, Any]:
    """The content of an image or audio message a person sends: the media id the bot fetches from the Graph
    API, its type and hash; an image's caption; an audio clip recorded in the app is a voice note."""
    media: dict[str, Any] = {"mime_type": mime_type, "sha256": sha256, "id": media_id}
    if kind == "image" and caption:
        media["caption"] = caption
    if kind == "audio":
        media["voice"] = True
    return {"type": kind, kind: media}


def message_event(
    account: WebhookAccount,
    who: Identity,
    text: str,
    *,
    pick: PickPart | None = None,
    offered: Option | None = None,
    style: str | None = None,
    context_id: str | None = None,
    content: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], str]:
    """The webhook event of one user message and the message's id. `context_id` is the bot's message the
    tap answers (the Cloud API's `context`); `content` replaces the text (a media message)."""
    message_id = new_message_id()
    message: dict[str, Any] = {
        "from": who.wa_id,
        "id": message_id,
        "timestamp": str(int(time.time())),
        **(content if content is not None else _content(text, pick, offered, style)),
    }
    if context_id is not None:
        message["context"] = {"from": account.display_phone_number, "id": context_id}
    contact = {"profile": {"name": who.name}, "wa_id": who.wa_id, "user_id": who.user_id}
    return _envelope(account, {"contacts": [contact], "messages": [message]}), message_id


def status_event(account: WebhookAccount, who: Identity, message_id: str, status: str) -> dict[str, Any]:
    """A status callback (sent, delivered, read) of a message the bot sent."""
    entry: dict[str, Any] = {
        "id": message_id,
        "status": status,
        "timestamp": str(int(time.time())),
        "recipient_id": who.wa_id,
        "recipient_user_id": who.user_id,
    }
    if status != "read":
        entry["conversation"] = {
            "id": hashlib.sha256(who.wa_id.encode()).hexdigest()[:32],
            "origin": {"type": "service"},
        }
        entry["pricing"] = {
            "billable": False,
            "pricing_model": "PMP",
            "category": "service",
            "type": "free_customer_service",
        }
    # Since the BSUID change (Graph API v26) a sent/delivered/read status names its user in `contacts` too.
    contact = {"wa_id": who.wa_id, "user_id": who.user_id}
    return _envelope(account, {"contacts": [contact], "statuses": [entry]})


def verification_query(verify_token: str) -> tuple[dict[str, str], str]:
    """The query of Meta's GET verification handshake and the challenge the bot must echo back."""
    challenge = str(secrets.randbelow(10**9))
    return {"hub.mode": "subscribe", "hub.verify_token": verify_token, "hub.challenge": challenge}, challenge


def dumps(event: dict[str, Any]) -> bytes:
    """The raw body the signature is computed over (compact JSON, as Meta sends it)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
