"""A WhatsApp triage bot built the way teams build them today: pywa 4.x (async) on FastAPI, served by uvicorn,
with pywa's own webhook handler (the verification handshake, the X-Hub-Signature-256 check with the app secret),
reply buttons and lists, replies addressed by the business-scoped user id (`recipient`, Graph API v26: pywa's
default user identifier), replies to a tap quoting it (`context`), a photo or voice note downloaded with pywa's
own media calls, and **no state endpoint**: what it decided is only in what it told the patient.

It is a test fixture for the engine's `whatsapp` adapter (tests/test_whatsapp_pywa.py) and, on purpose, a bad
triage service. Its **planted flaws** (the held-out style of bot the outcome-from-messages work must catch):

(a) **Under-triage of chest pressure.** Chest pain leads to a red-flags list; any flag gets "Call 999 now", but
    tapping "None of these" gets "Book a GP appointment" (gp), although chest pressure needs an ambulance
    whatever else is present. Every other chest-pain path advises calling 999.
(b) **A false promise.** The same path says "A nurse will call you back within 2 hours." Nothing is booked,
    no tool is called, no call is ever made.
(c) **A message the Cloud API refuses.** "Headache" is answered with four reply buttons (Mild / Moderate /
    Severe / Worst ever); the Cloud API allows three, answers HTTP 400 (code 131009) and the person sees
    nothing. pywa does not check the count before sending, so the bot learns it only from the API's error.

The other paths are sound: breathing trouble asks whether the person can speak in full sentences (no: 999;
yes: NHS 111 today), a rash asks the glass test (does not fade: 999; fades: a pharmacist), a cold gets self-care.

Run it: `python -m tests.bots.pywa_triage_bot --port 8080`, with the configuration in its own variables
(a team's names, not the engine's; a suite maps them in `bot.start.env` from `${WHATSAPP_*}`):
TRIAGE_GRAPH_URL (the Graph API's base URL; pywa calls https://graph.facebook.com otherwise), TRIAGE_PHONE_ID,
TRIAGE_TOKEN, TRIAGE_APP_SECRET, TRIAGE_VERIFY_TOKEN.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from pywa_async import WhatsApp, filters, types

log = logging.getLogger("pywa_triage_bot")

EMERGENCY = "Call 999 now and ask for an ambulance. Do not drive yourself."
MAIN_LIST = types.SectionList(
    button_title="Choose a problem",
    sections=[
        types.Section(
            title="Chest and breathing",
            rows=[
                types.SectionRow(title="Chest pain", callback_data="chest", description="pain or pressure"),
                types.SectionRow(title="Breathing trouble", callback_data="breathing"),
            ],
        ),
        types.Section(
            title="Other problems",
            rows=[
                types.SectionRow(title="Headache", callback_data="headache"),
                types.SectionRow(title="Rash", callback_data="rash"),
                types.SectionRow(title="Cough or cold", callback_data="cold"),
            ],
        ),
    ],
)
RED_FLAGS = types.SectionList(
    button_title="Show the list",
    sections=[
        types.Section(
            title="Any of these now?",
            rows=[
                types.SectionRow(title="Pain in arm or jaw", callback_data="flag_arm"),
                types.SectionRow(title="Sweating or clammy", callback_data="flag_sweat"),
                types.SectionRow(title="Short of breath", callback_data="flag_breath"),
                types.SectionRow(title="None of these", callback_data="flag_none"),
            ],
        )
    ],
)


def _yes_no(prefix: str) -> list[types.Button]:
    return [
        types.Button(title="Yes", callback_data=f"{prefix}_yes"),
        types.Button(title="No", callback_data=f"{prefix}_no"),
    ]


class LocalGraph(httpx.AsyncBaseTransport):
    """pywa always calls https://graph.facebook.com/vNN; this sends those calls to the Graph API base URL the
    bot is configured with (a test Graph API), through the `session=` pywa takes."""

    def __init__(self, base_url: str) -> None:
        self._base = httpx.URL(base_url)
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "graph.facebook.com":
            request.url = request.url.copy_with(
                scheme=self._base.scheme, host=self._base.host, port=self._base.port
            )
            request.headers["Host"] = request.url.netloc.decode()
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def whatsapp_app(env: dict[str, str]) -> tuple[FastAPI, WhatsApp]:
    """A FastAPI app serving pywa's webhook routes (signature checked) and /health, its Graph API calls sent
    to the engine's local Graph API when TRIAGE_GRAPH_URL names it; the caller adds the handlers."""
    app = FastAPI()
    graph = env.get("TRIAGE_GRAPH_URL")
    session = httpx.AsyncClient(transport=LocalGraph(graph), timeout=10) if graph else None
    wa = WhatsApp(
        phone_id=env["TRIAGE_PHONE_ID"],
        token=env["TRIAGE_TOKEN"],
        session=session,
        server=app,
        webhook_endpoint="/webhook",
        verify_token=env["TRIAGE_VERIFY_TOKEN"],
        app_secret=env["TRIAGE_APP_SECRET"],
    )

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app, wa


def build(env: dict[str, str]) -> FastAPI:
    """The FastAPI app with pywa's webhook routes and the triage handlers."""
    app, wa = whatsapp_app(env)

    @wa.on_message(filters.text)
    async def on_text(_: WhatsApp, msg: types.Message) -> None:
        await msg.mark_as_read()
        await msg.reply_text("Hello, I'm the clinic's triage helper. I'll ask a few questions.")
        await msg.reply_text("What is the main problem today?", buttons=MAIN_LIST)

    @wa.on_message(filters.image | filters.audio)
    async def on_media(_: WhatsApp, msg: types.Message) -> None:
        media: Any = msg.image or msg.audio
        data = await media.get_bytes()
        what = "photo" if msg.image else "voice note"
        await msg.reply_text(f"Thanks, I received your {what} ({len(data)} bytes, {media.mime_type}).")
        await msg.reply_text("What is the main problem today?", buttons=MAIN_LIST)

    @wa.on_message_status
    async def on_status(_: WhatsApp, status: types.MessageStatus) -> None:
        log.info("status %s for %s", status.status, status.id)

    @wa.on_callback_selection
    async def on_row(_: WhatsApp, sel: types.CallbackSelection) -> None:
        await _answer(sel, sel.data)

    @wa.on_callback_button
    async def on_button(_: WhatsApp, btn: types.CallbackButton) -> None:
        await _answer(btn, btn.data)

    return app


async def _answer(tap: types.CallbackSelection | types.CallbackButton, choice: str) -> None:
    """What each tap leads to; every reply to a tap quotes it (`context`)."""
    reply = tap.reply_text
    if choice == "chest":
        await reply("Is any of these happening now?", buttons=RED_FLAGS, quote=True)
    elif choice.startswith("flag_") and choice != "flag_none":
        await reply(EMERGENCY, quote=True)
    elif choice == "flag_none":
        # Planted flaws (a) and (b): chest pressure is sent to a GP, with a call-back nobody booked.
        await reply("Book a GP appointment for the next few days.", quote=True)
        await reply("A nurse will call you back within 2 hours.")
    elif choice == "breathing":
        await reply("Can you speak in full sentences?", buttons=_yes_no("speak"), quote=True)
    elif choice == "speak_no":
        await reply(EMERGENCY, quote=True)
    elif choice == "speak_yes":
        await reply("Contact NHS 111 today for an urgent assessment.", quote=True)
    elif choice == "headache":
        # Planted flaw (c): four reply buttons; the Cloud API takes 1 to 3.
        scale = [
            types.Button(title=title, callback_data=f"pain_{n}")
            for n, title in enumerate(("Mild", "Moderate", "Severe", "Worst ever"))
        ]
        await reply("How bad is the headache?", buttons=scale, quote=True)
    elif choice == "rash":
        await reply("Does the rash fade when you press a glass on it?", buttons=_yes_no("glass"), quote=True)
    elif choice == "glass_no":
        await reply(EMERGENCY, quote=True)
    elif choice == "glass_yes":
        await reply("See a pharmacist today for advice.", quote=True)
    elif choice == "cold":
        await reply("Rest, drink fluids and take paracetamol if needed. This is self-care.", quote=True)
    else:
        await reply("Sorry, I did not understand that. Please send a message to start again.", quote=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    uvicorn.run(build(dict(os.environ)), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
