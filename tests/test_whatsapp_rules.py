"""The Cloud API's rules for a message a bot sends, and the parts each valid message becomes."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.bots.whatsapp.events import Identity, sign
from simulator.bots.whatsapp.rules import RuleBroken, message_parts
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
    (_msg(type="interactive", interactive={"type": "product_carousel"}), "interactive.type", "must be 'button' or 'list'"),
    (_msg(type="template", template={"name": "appointment_reminder"}), "template.language", "is required"),
    (_msg(type="image", image={"id": "1", "link": "https://x/y.png"}), "image", "exactly one of 'id'"),
    (_msg(type="reaction", reaction={"emoji": "👍"}), "reaction.message_id", "is required"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "field", "rule"), BROKEN, ids=[f"{f}-{i}" for i, (_, f, _) in enumerate(BROKEN)]
)
def test_each_broken_rule_names_its_field_and_the_rule(body: dict[str, Any], field: str, rule: str) -> None:
    with pytest.raises(RuleBroken) as caught:
        message_parts(body)
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
        TextPart(text="[template follow_up (en_GB)] Sam")
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
