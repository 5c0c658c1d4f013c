"""The Cloud API's rules for a message a bot sends, and the parts the engine records for it.

Addressing (`check_address`): `recipient_type` individual; `to` (a phone number) or `recipient` (a
business-scoped user id, Graph API v26), `to` winning when both are given; `context.message_id` when the
message quotes another.

The real API refuses a message that breaks a rule (HTTP 400, error code 131009 or 100); the person never
sees it. Here each refusal is a `RuleBroken` naming the field and the rule, so the run records the bot's
mistake as an error, never as a pass or a fail. The limits are Meta's published ones (docs/whatsapp.md):
reply buttons 1 to 3, each title 1 to 20 characters and unique, ids up to 256; a list's button label up to
20 characters, 1 to 10 sections, 1 to 10 rows in all, row titles up to 24, descriptions up to 72, row ids up
to 200, a section title (up to 24) required when there are several sections; a body up to 1024 characters
in an interactive message, 4096 in a text; a header or footer up to 60; media by `id` or `link`.

A valid message becomes parts: text -> text; interactive buttons -> the body as text, then options
(buttons); a list -> the body, then options (list, with each row's section and the button label); media
-> a media part (ref = id or link); a template -> a text part `[template NAME (LANG)] params`; a reaction
-> a text part `[reaction EMOJI]`.
"""

from __future__ import annotations

__all__ = ["BSUID", "RuleBroken", "check_address", "message_parts"]

import re
from typing import Any

from simulator.bots.whatsapp.routing import phone_digits
from simulator.record.parts import MediaPart, Option, OptionsPart, Part, TextPart

# A business-scoped user id: the country, then digits (`US.13491208655302741918`), or a parent BSUID
# (`US.ENT.11815799212886844830`).
BSUID = re.compile(r"[A-Z]{2}\.(?:ENT\.)?[0-9A-Za-z]{1,64}")
MEDIA_TYPES = ("image", "audio", "video", "document", "sticker")
KNOWN_TYPES = ("text", "interactive", "template", "reaction", *MEDIA_TYPES)


class RuleBroken(Exception):
    """A message the Cloud API would refuse: `field` and the rule in words."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


def _text(value: Any, field: str, limit: int, *, required: bool = True) -> str | None:
    if value is None or value == "":
        if required:
            raise RuleBroken(field, "is required and must be non-empty text")
        return None
    if not isinstance(value, str):
        raise RuleBroken(field, f"must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise RuleBroken(field, f"is at most {limit} characters; the bot sent {len(value)} ({value[:40]!r})")
    return value


def _object(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RuleBroken(field, "is required and must be an object")
    return value


def _list(value: Any, field: str, low: int, high: int, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise RuleBroken(field, f"is required and must be a list of {what}")
    if not low <= len(value) <= high:
        raise RuleBroken(field, f"takes {low} to {high} {what}; the bot sent {len(value)}")
    return value


def _unique(values: list[str], field: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise RuleBroken(field, f"must be unique within the message; {value!r} appears twice")
        seen.add(value)


def _framing(interactive: dict[str, Any]) -> list[str]:
    """The header (text only), body and footer of an interactive message, checked, as lines."""
    lines = []
    header = interactive.get("header")
    if header is not None:
        header = _object(header, "interactive.header")
        if header.get("type") == "text":
            lines.append(_text(header.get("text"), "interactive.header.text", 60) or "")
    body = _object(interactive.get("body"), "interactive.body")
    lines.append(_text(body.get("text"), "interactive.body.text", 1024) or "")
    footer = interactive.get("footer")
    if footer is not None:
        lines.append(
            _text(_object(footer, "interactive.footer").get("text"), "interactive.footer.text", 60) or ""
        )
    return lines


def _buttons(action: dict[str, Any]) -> OptionsPart:
    buttons = _list(action.get("buttons"), "interactive.action.buttons", 1, 3, "reply buttons")
    options = []
    for n, button in enumerate(buttons):
        where = f"interactive.action.buttons[{n}]"
        button = _object(button, where)
        if button.get("type") != "reply":
            raise RuleBroken(f"{where}.type", f"must be 'reply'; the bot sent {button.get('type')!r}")
        reply = _object(button.get("reply"), f"{where}.reply")
        options.append(
            Option(
                id=_text(reply.get("id"), f"{where}.reply.id", 256) or "",
                title=_text(reply.get("title"), f"{where}.reply.title", 20) or "",
            )
        )
    _unique([o.title for o in options], "interactive.action.buttons[].reply.title")
    _unique([o.id for o in options], "interactive.action.buttons[].reply.id")
    return OptionsPart(style="buttons", options=options)


def _list_rows(action: dict[str, Any]) -> OptionsPart:
    label = _text(action.get("button"), "interactive.action.button", 20)
    sections = _list(action.get("sections"), "interactive.action.sections", 1, 10, "sections")
    options = []
    for s, section in enumerate(sections):
        where = f"interactive.action.sections[{s}]"
        section = _object(section, where)
        title = _text(section.get("title"), f"{where}.title", 24, required=len(sections) > 1)
        rows = _list(section.get("rows"), f"{where}.rows", 1, 10, "rows")
        for r, row in enumerate(rows):
            here = f"{where}.rows[{r}]"
            row = _object(row, here)
            options.append(
                Option(
                    id=_text(row.get("id"), f"{here}.id", 200) or "",
                    title=_text(row.get("title"), f"{here}.title", 24) or "",
                    description=_text(row.get("description"), f"{here}.description", 72, required=False),
                    section=title,
                )
            )
    if len(options) > 10:
        raise RuleBroken(
            "interactive.action.sections[].rows", f"take 10 rows in all; the bot sent {len(options)}"
        )
    _unique([o.id for o in options], "interactive.action.sections[].rows[].id")
    return OptionsPart(style="list", options=options, button=label)


def _interactive(message: dict[str, Any]) -> list[Part]:
    interactive = _object(message.get("interactive"), "interactive")
    kind = interactive.get("type")
    if kind not in ("button", "list"):
        raise RuleBroken(
            "interactive.type",
            f"must be 'button' or 'list' (the interactive messages a person answers by tapping); "
            f"the bot sent {kind!r}",
        )
    framing = _framing(interactive)
    action = _object(interactive.get("action"), "interactive.action")
    options = _buttons(action) if kind == "button" else _list_rows(action)
    return [TextPart(text="\n".join(line for line in framing if line)), options]


def _media(message: dict[str, Any], kind: str) -> list[Part]:
    media = _object(message.get(kind), kind)
    ref = media.get("id") or media.get("link")
    if not isinstance(ref, str) or not ref or ("id" in media and "link" in media):
        raise RuleBroken(kind, "needs exactly one of 'id' (an uploaded media id) or 'link' (an https URL)")
    caption = None
    if kind in ("image", "video", "document"):
        caption = _text(media.get("caption"), f"{kind}.caption", 1024, required=False)
    filename = (
        _text(media.get("filename"), f"{kind}.filename", 240, required=False) if kind == "document" else None
    )
    return [MediaPart(kind=kind, caption=caption, ref=ref, filename=filename)]  # type: ignore[arg-type]


def _template(message: dict[str, Any]) -> list[Part]:
    template = _object(message.get("template"), "template")
    name = _text(template.get("name"), "template.name", 512)
    language = _object(template.get("language"), "template.language")
    code = _text(language.get("code"), "template.language.code", 20)
    params = []
    for component in template.get("components") or []:
        for parameter in (component or {}).get("parameters") or []:
            if isinstance(parameter, dict) and isinstance(parameter.get("text"), str):
                params.append(parameter["text"])
    return [TextPart(text=f"[template {name} ({code})]" + (" " + " | ".join(params) if params else ""))]


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
        _text(_object(context, "context").get("message_id"), "context.message_id", 256)


def message_parts(message: Any) -> list[Part]:
    """The parts one send-API body shows the person; `RuleBroken` when the Cloud API would refuse it."""
    message = _object(message, "the request body")
    if message.get("messaging_product") != "whatsapp":
        raise RuleBroken(
            "messaging_product", f"must be 'whatsapp'; the bot sent {message.get('messaging_product')!r}"
        )
    check_address(message)
    kind = message.get("type", "text")
    if kind not in KNOWN_TYPES:
        raise RuleBroken("type", f"must be one of {', '.join(KNOWN_TYPES)}; the bot sent {kind!r}")
    if kind == "text":
        text = _object(message.get("text"), "text")
        return [TextPart(text=_text(text.get("body"), "text.body", 4096) or "")]
    if kind == "interactive":
        return _interactive(message)
    if kind == "template":
        return _template(message)
    if kind == "reaction":
        reaction = _object(message.get("reaction"), "reaction")
        _text(reaction.get("message_id"), "reaction.message_id", 256)
        return [TextPart(text=f"[reaction {reaction.get('emoji') or '(removed)'}]")]
    return _media(message, kind)
