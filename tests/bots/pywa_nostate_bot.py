"""A WhatsApp triage bot on pywa 4 (async) and FastAPI with **no state endpoint** and plain advice texts: the
held-out style of bot the engine must judge from what it told the patient (issue 46).

It is built as tests/bots/pywa_triage_bot.py is (pywa's own webhook handler and signature check, reply
buttons and lists, replies by BSUID quoting the tap), and it reuses that bot's `LocalGraph` (the test Graph
API). Each advice it gives is one of four plain sentences, one per outcome level, so a level's phrases are
easy to write and to check:
- emergency: "Call 999 now and ask for an ambulance."
- urgent:    "Go to A&E now."
- gp:        "Book a GP appointment for the next few days."
- self_care: "Look after yourself at home: ..."

Its **planted flaws**:
(a) **Under-triage of chest pressure.** Chest pain leads to a red-flags list; any flag gets "Call 999 now",
    but "None of these" (its row says "only the chest pressure") gets "Book a GP appointment".
(b) **A false promise.** The same path says "A nurse will call you back within 2 hours." Nothing is booked
    and no tool is called: the default claim rules must find it.
(c) **A message the Cloud API refuses.** "Headache" is answered with four reply buttons (the Cloud API allows
    three): a bot fault the report must count per scenario.

Run it: `python -m tests.bots.pywa_nostate_bot --port 8080`, configured as pywa_triage_bot is (TRIAGE_*).
"""

from __future__ import annotations

import argparse
import logging
import os

import uvicorn
from fastapi import FastAPI
from pywa_async import WhatsApp, filters, types

from tests.bots.pywa_triage_bot import whatsapp_app

EMERGENCY = "Call 999 now and ask for an ambulance."
URGENT = "Go to A&E now."
GP = "Book a GP appointment for the next few days."
SELF_CARE = "Look after yourself at home: rest, drink fluids and take paracetamol if you need it."
PROMISE = "A nurse will call you back within 2 hours."

PROBLEMS = types.SectionList(
    button_title="Choose a problem",
    sections=[
        types.Section(
            title="What is wrong?",
            rows=[
                types.SectionRow(title="Chest pain", callback_data="chest", description="pain or pressure"),
                types.SectionRow(title="Breathing trouble", callback_data="breathing"),
                types.SectionRow(title="Headache", callback_data="headache"),
                types.SectionRow(
                    title="Cough or cold", callback_data="cold", description="a cold or a cough"
                ),
            ],
        )
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
                types.SectionRow(
                    title="None of these", callback_data="flag_none", description="only the chest pressure"
                ),
            ],
        )
    ],
)


def build(env: dict[str, str]) -> FastAPI:
    """The FastAPI app with pywa's webhook routes and the triage handlers; no route reports a decision."""
    app, wa = whatsapp_app(env)

    @wa.on_message(filters.text)
    async def on_text(_: WhatsApp, msg: types.Message) -> None:
        await msg.reply_text("Hello, I'm the surgery's triage helper.")
        await msg.reply_text("What is the main problem today?", buttons=PROBLEMS)

    @wa.on_callback_selection
    async def on_row(_: WhatsApp, sel: types.CallbackSelection) -> None:
        await _answer(sel, sel.data)

    @wa.on_callback_button
    async def on_button(_: WhatsApp, btn: types.CallbackButton) -> None:
        await _answer(btn, btn.data)

    return app


async def _answer(tap: types.CallbackSelection | types.CallbackButton, choice: str) -> None:
    """What each tap leads to; every reply to a tap quotes it."""
    reply = tap.reply_text
    if choice == "chest":
        await reply("Is any of these happening now?", buttons=RED_FLAGS, quote=True)
    elif choice.startswith("flag_") and choice != "flag_none":
        await reply(EMERGENCY, quote=True)
    elif choice == "flag_none":
        # Planted flaws (a) and (b): chest pressure sent to a GP, with a call-back nobody booked.
        await reply(GP, quote=True)
        await reply(PROMISE)
    elif choice == "breathing":
        buttons = [
            types.Button(title="Yes", callback_data="speak_yes"),
            types.Button(title="No", callback_data="speak_no"),
        ]
        await reply("Can you speak in full sentences?", buttons=buttons, quote=True)
    elif choice == "speak_no":
        await reply(EMERGENCY, quote=True)
    elif choice == "speak_yes":
        await reply(URGENT, quote=True)
    elif choice == "headache":
        # Planted flaw (c): four reply buttons; the Cloud API takes 1 to 3.
        scale = [
            types.Button(title=title, callback_data=f"pain_{n}")
            for n, title in enumerate(("Mild", "Moderate", "Severe", "Worst ever"))
        ]
        await reply("How bad is the headache?", buttons=scale, quote=True)
    elif choice == "cold":
        await reply(SELF_CARE, quote=True)
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
