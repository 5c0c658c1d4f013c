"""The Cloud API's rules for a message a bot sends, and the parts each valid message becomes."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.bots.whatsapp.events import Identity, sign
from simulator.bots.whatsapp.fields import RuleBroken
from simulator.bots.whatsapp.rules import message_parts
from simulator.record.parts import MediaPart, OptionsPart, TextPart, part_text


def _msg(**body: Any) -> dict[str, Any]:
    return {"messaging_product": "whatsapp", "recipient_type": "individual", "to": "447700900123", **body}


def _buttons(*titles: str) -> dict[str, Any]:
    buttons = [{"type": "reply", "reply": {"id": f"b{i}", "title": t}} for i, t in enumerate(titles)]
    return {"type": "button", "body": {"text": "Pick one"}, "action": {"buttons": buttons}}


BROKEN = [
    ({"messaging_product": "sms", "to": "1", "type": "text", "text": {"body": "x"}}, "messaging_product", "must be 'whatsapp'"),
    (_msg(type="text", text={"body": "x" * 4097}), "text.body", "at most 4096 characters; the bot sent 4097"),
    (_msg(type="interactive", interactive=_buttons("Yes", "Yes")), "interactive.action.buttons[].reply.title", "unique"),
    (_msg(type="interactive", interactive=_buttons()), "interactive.action.buttons", "takes 1 to 3 reply buttons; the bot sent 0"),
    (
        _msg(type="interactive", interactive={**_buttons("Yes"), "header": {"type": "text", "text": "h" * 61}}),
        "interactive.header.text",
        "at most 60 characters",
    ),
    (
        _msg(type="interactive", interactive={"type": "list", "body": {"text": "b"}, "action": {"button": "Open", "sections": [
            {"rows": [{"id": "a", "title": "A"}]}, {"title": "Two", "rows": [{"id": "b", "title": "B"}]}]}}),
        "interactive.action.sections[0].title",
        "is required",
    ),
    (
        _msg(type="interactive", interactive={"type": "list", "body": {"text": "b"}, "action": {"button": "Choose one of these", "sections": [
            {"rows": [{"id": "a", "title": "A", "description": "d" * 73}]}]}}),
        "interactive.action.sections[0].rows[0].description",
        "at most 72 characters",
    ),
    (
        _msg(type="interactive", interactive={"type": "list", "body": {"text": "b"}, "action": {"button": "A label that is too long", "sections": []}}),
        "interactive.action.button",
        "at most 20 characters",
    ),
    (_msg(type="interactive", interactive={"type": "product_carousel"}), "interactive.type", "must be one of button, list, cta_url, flow"),
    (_msg(type="location", location={"longitude": -0.12, "name": "A&E"}), "location.latitude", "is required and must be a number"),
    (_msg(type="location", location={"latitude": 91, "longitude": 0}), "location.latitude", "from -90 to 90; the bot sent 91"),
    (_msg(type="contacts", contacts=[{"phones": [{"phone": "111"}]}]), "contacts[0].name", "is required"),
    (_msg(type="contacts", contacts=[]), "contacts", "takes 1 to 257 contact cards; the bot sent 0"),
    (
        _msg(type="interactive", interactive={"type": "cta_url", "body": {"text": "b"}, "action": {"name": "cta_url", "parameters": {"display_text": "Call 999"}}}),
        "interactive.action.parameters.url",
        "is required",
    ),
    (
        _msg(type="interactive", interactive={"type": "cta_url", "body": {"text": "b"}, "action": {"name": "cta_url", "parameters": {"display_text": "Call 999 or go to A&E now", "url": "https://x"}}}),
        "interactive.action.parameters.display_text",
        "at most 20 characters",
    ),
    (
        _msg(type="interactive", interactive={"type": "location_request_message", "action": {"name": "send_location"}}),
        "interactive.body",
        "is required",
    ),
    (
        _msg(type="interactive", interactive={"type": "flow", "body": {"text": "b"}, "action": {"name": "flow", "parameters": {"flow_cta": "Start", "flow_message_version": "3"}}}),
        "interactive.action.parameters.flow_id",
        "is required",
    ),
    (_msg(type="template", template={"name": "emergency", "language": {"code": "en_GB"}}), "template.components[type=body].parameters", "132000"),
    (_msg(type="template", template={"name": "appointment_reminder"}), "template.language", "is required"),
    (_msg(type="image", image={"id": "1", "link": "https://x/y.png"}), "image", "exactly one of 'id'"),
    (_msg(type="reaction", reaction={"emoji": "👍"}), "reaction.message_id", "is required"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "field", "rule"), BROKEN, ids=[f"{f}-{i}" for i, (_, f, _) in enumerate(BROKEN)]
)
def test_each_broken_rule_names_its_field_and_the_rule(body: dict[str, Any], field: str, rule: str) -> None:
    with pytest.raises(RuleBroken) as caught:
        message_parts(body, {"emergency": "{{1}}, call 999 now."})
    assert caught.value.field == field and rule in caught.value.rule


def test_valid_messages_become_the_documented_parts() -> None:
    interactive = {
        **_buttons("Yes", "No"),
        "header": {"type": "text", "text": "Triage"},
        "footer": {"text": "999 if urgent"},
    }
    text, options = message_parts(_msg(type="interactive", interactive=interactive))
    assert isinstance(text, TextPart) and text.text == "Triage\nPick one\n999 if urgent"
    assert isinstance(options, OptionsPart) and part_text(options) == "[buttons] Yes [id=b0] | No [id=b1]"
    [media] = message_parts(
        _msg(
            type="document",
            document={"link": "https://x/leaflet.pdf", "filename": "leaflet.pdf", "caption": "Advice"},
        )
    )
    assert isinstance(media, MediaPart) and (media.kind, media.ref, media.filename) == (
        "document",
        "https://x/leaflet.pdf",
        "leaflet.pdf",
    )
    template = {
        "name": "follow_up",
        "language": {"code": "en_GB"},
        "components": [{"type": "body", "parameters": [{"type": "text", "text": "Sam"}]}],
    }
    assert message_parts(_msg(type="template", template=template)) == [
        TextPart(
            text="[template follow_up (en_GB): text not known to the simulator (give it in bot.templates); params: Sam]"
        )
    ]
    known = {"follow_up": "Hello {{1}}, how is the pain today?"}
    assert message_parts(_msg(type="template", template=template), known) == [
        TextPart(text="Hello Sam, how is the pain today?")
    ]
    assert message_parts(_msg(type="reaction", reaction={"message_id": "wamid.X", "emoji": "👍"})) == [
        TextPart(text="[reaction 👍]")
    ]
    assert message_parts(_msg(text={"body": "hi", "preview_url": False})) == [
        TextPart(text="hi")
    ]  # type defaults to text


def test_identities_are_stable_per_conversation_and_signatures_are_meta_s_form() -> None:
    one = Identity.for_conversation("run/a#0/1", "Alex", "GB")
    assert one == Identity.for_conversation("run/a#0/1", "Alex", "GB")
    other = Identity.for_conversation("run/a#1/1", "Alex", "GB")
    assert one.wa_id != other.wa_id and one.user_id != other.user_id
    assert one.wa_id.startswith("447") and len(one.wa_id) == 12 and one.user_id.startswith("GB.")
    # The HMAC-SHA256 of the raw body, hex, with the sha256= prefix (the vector computed with openssl dgst).
    assert sign(b"{}", "secret") == "sha256=77325902caca812dc259733aacd046b73817372c777b8d95b402647474516e13"


# What pywa 4.5 posts for each kind (captured from its send_* methods), and the parts the person's view becomes.
SHOWN = [
    (
        {"type": "location", "location": {"latitude": 51.5, "longitude": -0.12, "name": "St Thomas' A&E", "address": "Westminster Bridge Rd"}},
        ["[location] St Thomas' A&E, Westminster Bridge Rd (51.5, -0.12)"],
    ),
    (
        {"type": "contacts", "contacts": [{"name": {"formatted_name": "NHS 111", "first_name": "NHS", "last_name": None}, "birthday": None,
          "phones": [{"phone": "111", "type": "WORK", "wa_id": None}], "emails": [], "urls": [{"url": "https://111.nhs.uk", "type": "WORK"}], "addresses": [], "org": None}]},
        ["[contact] NHS 111: phone 111 (WORK), url https://111.nhs.uk (WORK)"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "cta_url", "action": {"name": "cta_url", "parameters": {"display_text": "Call 999", "url": "https://www.nhs.uk/111"}},
          "header": {"type": "text", "text": "Urgent"}, "body": {"text": "Call 999 now"}, "footer": {"text": "NHS"}}},
        ["Urgent\nCall 999 now\nNHS", "[link button] Call 999 -> https://www.nhs.uk/111"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "location_request_message", "action": {"name": "send_location"}, "body": {"text": "Please share your location"}}},
        ["Please share your location", "[location request] the person is asked to share their location (Send location)"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "flow", "action": {"name": "flow", "parameters": {"mode": "published", "flow_message_version": "3", "flow_token": "tok", "flow_id": "123", "flow_cta": "Start triage"}}, "body": {"text": "Tell us your symptoms"}}},
        ["Tell us your symptoms", "[form button] Start triage (WhatsApp Flow 123)"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "voice_call", "action": {"name": "voice_call", "parameters": {"display_text": "Call the nurse"}}, "body": {"text": "Call us"}}},
        ["Call us", "[call button] Call the nurse"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "product", "action": {"catalog_id": "c1", "product_retailer_id": "sku1"}}},
        ["[product] sku1 (catalog c1)"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "product_list", "action": {"catalog_id": "c1", "sections": [{"title": "Kits", "product_items": [{"product_retailer_id": "a"}, {"product_retailer_id": "b"}]}]},
          "header": {"type": "text", "text": "Our kits"}, "body": {"text": "Pick one"}}},
        ["Our kits\nPick one", "[product list] Kits: a, b"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "catalog_message", "action": {"name": "catalog_message", "parameters": {"thumbnail_product_retailer_id": "a"}}, "body": {"text": "Our shop"}}},
        ["Our shop", "[catalog button] View catalog"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "address_message", "action": {"name": "address_message", "parameters": {"country": "IN"}}, "body": {"text": "Where should we send it?"}}},
        ["Where should we send it?", "[address request] the person is asked for their address (IN)"],
    ),
    (
        {"type": "interactive", "interactive": {"type": "carousel", "body": {"text": "Options"}, "action": {"cards": [
            {"card_index": 0, "type": "cta_url", "action": {"name": "cta_url", "parameters": {"display_text": "Open", "url": "https://x"}}, "body": {"text": "Card one"}, "header": {"type": "image", "image": {"link": "https://x/1.png"}}},
            {"card_index": 1, "type": "cta_url", "action": {"buttons": [{"type": "quick_reply", "quick_reply": {"id": "p", "title": "Pick"}}]}, "body": {"text": "Card two"}, "header": {"type": "image", "image": {"link": "https://x/2.png"}}}]}}},
        ["Options", "[image]", "[card 1] Card one", "[link button] Open -> https://x", "[image]", "[card 2] Card two", "[quick replies] Pick"],
    ),
    ({"type": "sticker", "sticker": {"link": "https://x.y/s.webp"}}, ["[sticker]"]),
    ({"type": "audio", "audio": {"link": "https://x.y/a.ogg", "voice": True}}, ["[audio]"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "shown"), SHOWN, ids=[str(b.get("interactive", b)["type"]) for b, _ in SHOWN]
)
def test_every_documented_message_type_is_taken_and_shown_as_the_person_reads_it(
    body: dict[str, Any], shown: list[str]
) -> None:
    assert [part_text(part) for part in message_parts(_msg(**body))] == shown
