"""The Cloud API's interactive messages (`type: interactive`): their rules and the parts the engine records.

Every interactive type the Cloud API documents for sending is taken (`KINDS`). Reply buttons and lists are
what a person answers by tapping: they become `options` parts and end the bot's turn. The others are shown,
not answered by a tap the engine can play: each becomes its framing (header, body, footer) as a `text` part,
then a `text` part saying what the person sees, e.g. `[link button] Call 999 -> https://…`, so the judges and
the outcome reader (`outcome.source: messages`) read them. A media header is a `media` part before the text.

The limits are Meta's published ones (docs/whatsapp.md): reply buttons 1 to 3, each title 1 to 20 characters
and unique, ids up to 256; a list's button label up to 20 characters, 1 to 10 sections, 1 to 10 rows in all,
row titles up to 24, descriptions up to 72, row ids up to 200, a section title (up to 24) required when there
are several sections; a body up to 1024 characters; a header or footer up to 60; a CTA's display text up to
20 and its https or http URL; a product list's header, 1 to 10 sections and up to 30 products; a carousel's 1
to 10 cards.
"""

from __future__ import annotations

__all__ = ["interactive_parts"]

from collections.abc import Callable
from typing import Any

from simulator.bots.whatsapp.fields import RuleBroken, list_field, object_field, text_field, unique
from simulator.record.parts import MediaPart, Option, OptionsPart, Part, TextPart

HEADER_MEDIA = ("image", "video", "document")
# The interactive types whose body is optional (Meta: a single product's body may be left out).
BODY_OPTIONAL = frozenset({"product"})


def _media_header(header: dict[str, Any], where: str) -> MediaPart:
    kind = header["type"]
    media = object_field(header.get(kind), f"{where}.{kind}")
    ref = media.get("id") or media.get("link")
    if not isinstance(ref, str) or not ref:
        raise RuleBroken(f"{where}.{kind}", "needs 'id' (an uploaded media id) or 'link' (an https URL)")
    return MediaPart(kind=kind, ref=ref, filename=media.get("filename") if kind == "document" else None)


def _framing(interactive: dict[str, Any], where: str, body_required: bool) -> tuple[list[Part], str]:
    """The header (a text, or a media part), body and footer, checked: (media parts, the text lines)."""
    media: list[Part] = []
    lines = []
    header = interactive.get("header")
    if header is not None:
        header = object_field(header, f"{where}.header")
        if header.get("type") in HEADER_MEDIA:
            media.append(_media_header(header, f"{where}.header"))
        elif header.get("type") == "text":
            lines.append(text_field(header.get("text"), f"{where}.header.text", 60) or "")
        else:
            raise RuleBroken(
                f"{where}.header.type",
                f"must be text, image, video or document; the bot sent {header.get('type')!r}",
            )
    body = interactive.get("body")
    if body is not None or body_required:
        text = object_field(body, f"{where}.body").get("text")
        lines.append(text_field(text, f"{where}.body.text", 1024, required=body_required) or "")
    footer = interactive.get("footer")
    if footer is not None:
        text = object_field(footer, f"{where}.footer").get("text")
        lines.append(text_field(text, f"{where}.footer.text", 60) or "")
    return media, "\n".join(line for line in lines if line)


def _buttons(action: dict[str, Any], where: str = "interactive.action") -> list[Part]:
    buttons = list_field(action.get("buttons"), f"{where}.buttons", 1, 3, "reply buttons")
    options = []
    for n, button in enumerate(buttons):
        here = f"{where}.buttons[{n}]"
        button = object_field(button, here)
        kind = button.get("type")
        if kind not in ("reply", "quick_reply"):
            raise RuleBroken(f"{here}.type", f"must be 'reply'; the bot sent {kind!r}")
        reply = object_field(button.get(kind), f"{here}.{kind}")
        options.append(
            Option(
                id=text_field(reply.get("id"), f"{here}.{kind}.id", 256) or "",
                title=text_field(reply.get("title"), f"{here}.{kind}.title", 20) or "",
            )
        )
    _unique_options(options, f"{where}.buttons[].reply")
    return [OptionsPart(style="buttons", options=options)]


def _unique_options(options: list[Option], where: str) -> None:
    unique([o.title for o in options], f"{where}.title")
    unique([o.id for o in options], f"{where}.id")


def _list_rows(action: dict[str, Any]) -> list[Part]:
    label = text_field(action.get("button"), "interactive.action.button", 20)
    sections = list_field(action.get("sections"), "interactive.action.sections", 1, 10, "sections")
    options = []
    for s, section in enumerate(sections):
        where = f"interactive.action.sections[{s}]"
        section = object_field(section, where)
        title = text_field(section.get("title"), f"{where}.title", 24, required=len(sections) > 1)
        rows = list_field(section.get("rows"), f"{where}.rows", 1, 10, "rows")
        for r, row in enumerate(rows):
            here = f"{where}.rows[{r}]"
            row = object_field(row, here)
            options.append(
                Option(
                    id=text_field(row.get("id"), f"{here}.id", 200) or "",
                    title=text_field(row.get("title"), f"{here}.title", 24) or "",
                    description=text_field(row.get("description"), f"{here}.description", 72, required=False),
                    section=title,
                )
            )
    if len(options) > 10:
        raise RuleBroken(
            "interactive.action.sections[].rows", f"take 10 rows in all; the bot sent {len(options)}"
        )
    unique([o.id for o in options], "interactive.action.sections[].rows[].id")
    return [OptionsPart(style="list", options=options, button=label)]


def _named(action: dict[str, Any], name: str, where: str = "interactive.action") -> dict[str, Any]:
    """An action of the form `{name, parameters}`: the name checked, the parameters (an object, maybe empty)."""
    if action.get("name") != name:
        raise RuleBroken(f"{where}.name", f"must be {name!r}; the bot sent {action.get('name')!r}")
    parameters = action.get("parameters")
    return {} if parameters is None else object_field(parameters, f"{where}.parameters")


def _url(value: Any, field: str) -> str:
    url = text_field(value, field, 2000) or ""
    if not url.startswith(("https://", "http://")):
        raise RuleBroken(field, f"must be an http(s) URL; the bot sent {url[:40]!r}")
    return url


def _cta_url(action: dict[str, Any], where: str = "interactive.action") -> list[Part]:
    parameters = _named(action, "cta_url", where)
    label = text_field(parameters.get("display_text"), f"{where}.parameters.display_text", 20)
    url = _url(parameters.get("url"), f"{where}.parameters.url")
    return [TextPart(text=f"[link button] {label} -> {url}")]


def _flow(action: dict[str, Any]) -> list[Part]:
    parameters = _named(action, "flow")
    where = "interactive.action.parameters"
    label = text_field(parameters.get("flow_cta"), f"{where}.flow_cta", 30)
    text_field(str(parameters.get("flow_message_version") or ""), f"{where}.flow_message_version", 10)
    flow = parameters.get("flow_id") or parameters.get("flow_name")
    if not isinstance(flow, str | int) or isinstance(flow, bool) or flow == "":
        raise RuleBroken(f"{where}.flow_id", "is required (or flow_name): the flow the button opens")
    return [TextPart(text=f"[form button] {label} (WhatsApp Flow {flow})")]


def _asks(name: str, said: str) -> Callable[[dict[str, Any]], list[Part]]:
    """An action that only asks the person for something (their location, a call, their details)."""

    def parts(action: dict[str, Any]) -> list[Part]:
        _named(action, name)
        return [TextPart(text=said)]

    return parts


def _voice_call(action: dict[str, Any]) -> list[Part]:
    parameters = _named(action, "voice_call")
    label = text_field(
        parameters.get("display_text"), "interactive.action.parameters.display_text", 20, required=False
    )
    return [TextPart(text=f"[call button] {label or 'Call'}")]


def _address(action: dict[str, Any]) -> list[Part]:
    parameters = _named(action, "address_message")
    country = text_field(parameters.get("country"), "interactive.action.parameters.country", 2)
    return [TextPart(text=f"[address request] the person is asked for their address ({country})")]


def _catalog(action: dict[str, Any]) -> list[Part]:
    _named(action, "catalog_message")
    return [TextPart(text="[catalog button] View catalog")]


def _product(action: dict[str, Any]) -> list[Part]:
    catalog = text_field(action.get("catalog_id"), "interactive.action.catalog_id", 256)
    product = text_field(action.get("product_retailer_id"), "interactive.action.product_retailer_id", 256)
    return [TextPart(text=f"[product] {product} (catalog {catalog})")]


def _products(action: dict[str, Any]) -> list[Part]:
    text_field(action.get("catalog_id"), "interactive.action.catalog_id", 256)
    sections = list_field(action.get("sections"), "interactive.action.sections", 1, 10, "sections")
    shown, count = [], 0
    for s, section in enumerate(sections):
        where = f"interactive.action.sections[{s}]"
        section = object_field(section, where)
        title = text_field(section.get("title"), f"{where}.title", 24, required=len(sections) > 1)
        items = list_field(section.get("product_items"), f"{where}.product_items", 1, 30, "products")
        ids = [
            text_field(
                object_field(item, f"{where}.product_items[{i}]").get("product_retailer_id"),
                f"{where}.product_items[{i}].product_retailer_id",
                256,
            )
            or ""
            for i, item in enumerate(items)
        ]
        count += len(ids)
        shown.append((f"{title}: " if title else "") + ", ".join(ids))
    if count > 30:
        raise RuleBroken(
            "interactive.action.sections[].product_items", f"take 30 products in all; the bot sent {count}"
        )
    return [TextPart(text="[product list] " + " | ".join(shown))]


def _card_buttons(action: dict[str, Any], where: str) -> TextPart:
    """A carousel card's buttons as the person sees them (quick replies are shown, not tapped here)."""
    if "buttons" not in action:
        [link] = _cta_url(action, where)
        assert isinstance(link, TextPart)
        return link
    [options] = _buttons(action, where)
    assert isinstance(options, OptionsPart)
    return TextPart(text="[quick replies] " + " | ".join(o.title for o in options.options))


def _carousel(action: dict[str, Any]) -> list[Part]:
    cards = list_field(action.get("cards"), "interactive.action.cards", 1, 10, "cards")
    parts: list[Part] = []
    for n, card in enumerate(cards):
        where = f"interactive.action.cards[{n}]"
        card = object_field(card, where)
        media, text = _framing(card, where, body_required=False)
        buttons = _card_buttons(object_field(card.get("action"), f"{where}.action"), f"{where}.action")
        parts += [*media, TextPart(text=f"[card {n + 1}] {text}".rstrip()), buttons]
    return parts


def _product_list(interactive: dict[str, Any]) -> list[Part]:
    """Meta: a product list needs a text header, then 1 to 10 sections and up to 30 products in all."""
    header = object_field(interactive.get("header"), "interactive.header")
    if header.get("type") != "text":
        raise RuleBroken(
            "interactive.header.type",
            f"must be 'text' for a product_list; the bot sent {header.get('type')!r}",
        )
    return _products(_action(interactive))


def _action(interactive: dict[str, Any]) -> dict[str, Any]:
    return object_field(interactive.get("action"), "interactive.action")


def _of_action(parts: Callable[[dict[str, Any]], list[Part]]) -> Callable[[dict[str, Any]], list[Part]]:
    return lambda interactive: parts(_action(interactive))


KINDS: dict[str, Callable[[dict[str, Any]], list[Part]]] = {
    "button": _of_action(_buttons),
    "list": _of_action(_list_rows),
    "cta_url": _of_action(_cta_url),
    "flow": _of_action(_flow),
    "location_request_message": _of_action(
        _asks(
            "send_location", "[location request] the person is asked to share their location (Send location)"
        )
    ),
    "voice_call": _of_action(_voice_call),
    "call_permission_request": _of_action(
        _asks(
            "call_permission_request",
            "[call permission request] the person is asked whether the business may call them",
        )
    ),
    "request_contact_info": _of_action(
        _asks(
            "request_contact_info",
            "[contact details request] the person is asked to share their contact details",
        )
    ),
    "address_message": _of_action(_address),
    "catalog_message": _of_action(_catalog),
    "product": _of_action(_product),
    "product_list": _product_list,
    "carousel": _of_action(_carousel),
}


def interactive_parts(message: dict[str, Any]) -> list[Part]:
    """The parts of an interactive message: framing, then what it offers; `RuleBroken` when refused."""
    interactive = object_field(message.get("interactive"), "interactive")
    kind = interactive.get("type")
    if kind not in KINDS:
        raise RuleBroken("interactive.type", f"must be one of {', '.join(KINDS)}; the bot sent {kind!r}")
    media, text = _framing(interactive, "interactive", body_required=kind not in BODY_OPTIONAL)
    offered = KINDS[kind](interactive)
    return [*media, *([TextPart(text=text)] if text else []), *offered]
