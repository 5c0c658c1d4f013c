"""The Cloud API's rules for a message a bot sends, and the parts the engine records for it.

Addressing (`check_address`): `recipient_type` individual; `to` (a phone number) or `recipient` (a
business-scoped user id, Graph API v26), `to` winning when both are given; `context.message_id` when the
message quotes another.

Every message type the Cloud API documents for sending is taken (`TYPES`); a message that breaks one of its
rules is refused with a `RuleBroken` naming the field and the rule (fields.py). A valid message becomes parts
the judges and the outcome reader read (docs/whatsapp.md, "What the bot sent, as parts"): text -> text;
interactive -> interactive.py; media -> a media part (ref = id or link); a location -> a text part
`[location] NAME, ADDRESS (LAT, LON)`; contacts -> a text part per card, `[contact] NAME: phone …`; a
template -> its text with the parameters filled in, when the suite gives it (templates.py); a reaction -> a
text part `[reaction EMOJI]`.
"""

from __future__ import annotations

__all__ = ["BSUID", "check_address", "message_parts"]

import re
from collections.abc import Callable
from typing import Any

from simulator.bots.whatsapp.fields import RuleBroken, list_field, number_field, object_field, text_field
from simulator.bots.whatsapp.interactive import interactive_parts
from simulator.bots.whatsapp.routing import phone_digits
from simulator.bots.whatsapp.templates import template_parts
from simulator.record.parts import MediaPart, Part, TextPart

# A business-scoped user id: the country, then digits (`US.13491208655302741918`), or a parent BSUID
# (`US.ENT.11815799212886844830`).
BSUID = re.compile(r"[A-Z]{2}\.(?:ENT\.)?[0-9A-Za-z]{1,64}")
MEDIA_TYPES = ("image", "audio", "video", "document", "sticker")


def _media(message: dict[str, Any], kind: str) -> list[Part]:
    media = object_field(message.get(kind), kind)
    ref = media.get("id") or media.get("link")
    if not isinstance(ref, str) or not ref or ("id" in media and "link" in media):
        raise RuleBroken(kind, "needs exactly one of 'id' (an uploaded media id) or 'link' (an https URL)")
    caption = None
    if kind in ("image", "video", "document"):
        caption = text_field(media.get("caption"), f"{kind}.caption", 1024, required=False)
    filename = (
        text_field(media.get("filename"), f"{kind}.filename", 240, required=False)
        if kind == "document"
        else None
    )
    return [MediaPart(kind=kind, caption=caption, ref=ref, filename=filename)]  # type: ignore[arg-type]


def _plain_text(message: dict[str, Any]) -> list[Part]:
    text = object_field(message.get("text"), "text")
    return [TextPart(text=text_field(text.get("body"), "text.body", 4096) or "")]


def _reaction(message: dict[str, Any]) -> list[Part]:
    reaction = object_field(message.get("reaction"), "reaction")
    text_field(reaction.get("message_id"), "reaction.message_id", 256)
    return [TextPart(text=f"[reaction {reaction.get('emoji') or '(removed)'}]")]


def _location(message: dict[str, Any]) -> list[Part]:
    """A pin: latitude and longitude required, its name and address shown when given."""
    location = object_field(message.get("location"), "location")
    latitude = number_field(location.get("latitude"), "location.latitude", -90, 90)
    longitude = number_field(location.get("longitude"), "location.longitude", -180, 180)
    name = text_field(location.get("name"), "location.name", 1000, required=False)
    address = text_field(location.get("address"), "location.address", 1000, required=False)
    said = ", ".join(x for x in (name, address) if x)
    return [TextPart(text=f"[location] {said + ' ' if said else ''}({latitude:g}, {longitude:g})")]


def _card(contact: Any, where: str) -> TextPart:
    """One contact card: `name.formatted_name` required; its phones, emails and web sites shown."""
    contact = object_field(contact, where)
    name = text_field(
        object_field(contact.get("name"), f"{where}.name").get("formatted_name"),
        f"{where}.name.formatted_name",
        1000,
    )
    said = []
    for key, value in (("phones", "phone"), ("emails", "email"), ("urls", "url")):
        entries = contact.get(key) or []
        if not isinstance(entries, list):
            raise RuleBroken(f"{where}.{key}", f"must be a list of {key}")
        for n, entry in enumerate(entries):
            entry = object_field(entry, f"{where}.{key}[{n}]")
            shown = text_field(entry.get(value), f"{where}.{key}[{n}].{value}", 1000, required=False)
            if shown:
                said.append(
                    f"{value} {shown}" + (f" ({entry['type']})" if isinstance(entry.get("type"), str) else "")
                )
    org = contact.get("org")
    if isinstance(org, dict) and isinstance(org.get("company"), str):
        said.append(org["company"])
    return TextPart(text=f"[contact] {name}" + (": " + ", ".join(said) if said else ""))


def _contacts(message: dict[str, Any]) -> list[Part]:
    cards = list_field(message.get("contacts"), "contacts", 1, 257, "contact cards")
    return [_card(card, f"contacts[{n}]") for n, card in enumerate(cards)]


def _without_templates(
    handler: Callable[[dict[str, Any]], list[Part]],
) -> Callable[[dict[str, Any], dict[str, str]], list[Part]]:
    return lambda message, _: handler(message)


def _media_type(kind: str) -> Callable[[dict[str, Any], dict[str, str]], list[Part]]:
    return lambda message, _: _media(message, kind)


# Every message type the Cloud API documents for sending to a person, and how it becomes parts.
TYPES: dict[str, Callable[[dict[str, Any], dict[str, str]], list[Part]]] = {
    "text": _without_templates(_plain_text),
    "interactive": _without_templates(interactive_parts),
    "template": template_parts,
    "reaction": _without_templates(_reaction),
    "location": _without_templates(_location),
    "contacts": _without_templates(_contacts),
    **{kind: _media_type(kind) for kind in MEDIA_TYPES},
}


def check_address(message: dict[str, Any]) -> None:
    """The addressing of a send-API body: `recipient_type`, `to` (a phone number) and/or `recipient` (a
    business-scoped user id, Graph API v26), and the optional `context` (the message it replies to)."""
    if message.get("recipient_type", "individual") != "individual":
        raise RuleBroken(
            "recipient_type",
            f"must be 'individual' for a message to one person; the bot sent {message.get('recipient_type')!r}",
        )
    to, recipient = message.get("to"), message.get("recipient")
    if to is None and recipient is None:
        raise RuleBroken(
            "to / recipient",
            "a message needs `to` (the user's phone number: the webhook's contacts[0].wa_id) or `recipient` "
            "(the business-scoped user id: contacts[0].user_id); the bot sent neither",
        )
    if to is not None and not (isinstance(to, str) and phone_digits(to).isdigit() and len(to) <= 64):
        raise RuleBroken(
            "to", f"must be a phone number as a string (the webhook's contacts[0].wa_id); the bot sent {to!r}"
        )
    if recipient is not None and not (isinstance(recipient, str) and BSUID.fullmatch(recipient)):
        raise RuleBroken(
            "recipient",
            "must be a business-scoped user id such as 'GB.1234567890' (the webhook's contacts[0].user_id); "
            f"the bot sent {str(recipient)[:40]!r}",
        )
    context = message.get("context")
    if context is not None:
        text_field(object_field(context, "context").get("message_id"), "context.message_id", 256)


def message_parts(message: Any, templates: dict[str, str] | None = None) -> list[Part]:
    """The parts one send-API body shows the person (`templates`: the suite's template texts by name);
    `RuleBroken` when the Cloud API would refuse it."""
    message = object_field(message, "the request body")
    if message.get("messaging_product") != "whatsapp":
        raise RuleBroken(
            "messaging_product", f"must be 'whatsapp'; the bot sent {message.get('messaging_product')!r}"
        )
    check_address(message)
    kind = message.get("type", "text")
    if kind not in TYPES:
        raise RuleBroken("type", f"must be one of {', '.join(TYPES)}; the bot sent {kind!r}")
    return TYPES[kind](message, templates or {})
