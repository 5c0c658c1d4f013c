"""A WhatsApp bot on pywa 4 (async, FastAPI, pywa's own webhook handler) that answers with the message kinds
beyond text, buttons and lists, each with pywa's own send call, chosen by KINDS_MODE:
- `pin`: the escalation "Call 999 now and ask for an ambulance.", then the nearest A&E as a location pin
  (`reply_location`): a clinic bot that sends a pin only when it escalates.
- `all`: a URL button (`URLButton`, interactive cta_url) carrying the escalation, a contact card
  (`reply_contact`), a location request (`reply_location_request`), a WhatsApp Flow button (`FlowButton`), a
  sticker, a voice note, a reaction and a template (`reply_template`, `triage_emergency` with the name).
- `refused`: the escalation, then a location pin without its latitude, which the Cloud API refuses.
Configured as tests/bots/pywa_triage_bot.py is (TRIAGE_*); no state endpoint.
"""

from __future__ import annotations

import argparse
import os

import uvicorn
from fastapi import FastAPI
from pywa_async import WhatsApp, filters, types
from pywa_async.types import templates

from tests.bots.pywa_triage_bot import whatsapp_app

EMERGENCY = "Call 999 now and ask for an ambulance."
A_AND_E = {
    "latitude": 51.4989,
    "longitude": -0.1188,
    "name": "St Thomas' A&E",
    "address": "Westminster Bridge Rd",
}


async def _all(msg: types.Message) -> None:
    await msg.react("👍")
    await msg.reply_text(EMERGENCY, buttons=types.URLButton(title="Call 999", url="https://www.nhs.uk/111"))
    await msg.reply_contact(
        types.Contact(
            name=types.Contact.Name(formatted_name="NHS 111", first_name="NHS"),
            phones=[types.Contact.Phone(phone="111", type="WORK")],
        )
    )
    await msg.reply_location_request(text="Please share your location so I can find the nearest A&E.")
    await msg.reply_text(
        "Tell us more about your symptoms.",
        buttons=types.FlowButton(title="Start the form", flow_id="1234567890", flow_token="t"),
    )
    await msg.reply_sticker("https://example.org/ambulance.webp")
    await msg.reply_voice("https://example.org/advice.ogg")
    await msg.reply_template(
        name="triage_emergency",
        language=templates.TemplateLanguage.ENGLISH_UK,
        params=[templates.BodyText.params("Alex")],
    )


def build(env: dict[str, str]) -> FastAPI:
    app, wa = whatsapp_app(env)
    mode = env.get("KINDS_MODE", "pin")
    answered: set[str] = set()

    @wa.on_message(filters.text)
    async def on_text(_: WhatsApp, msg: types.Message) -> None:
        if msg.sender in answered:  # one answer per conversation; later messages get a short one
            await msg.reply_text("Take care.")
            return
        answered.add(msg.sender)
        if mode == "all":
            await _all(msg)
            return
        await msg.reply_text(EMERGENCY)
        if mode == "pin":
            await msg.reply_location(**A_AND_E)  # type: ignore[arg-type]
        else:  # refused: no latitude, which the Cloud API requires
            await msg.reply_location(**{**A_AND_E, "latitude": None})  # type: ignore[arg-type]

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(build(dict(os.environ)), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
