"""Planted bots whose turns hold every part type: buttons, a list, media, tool calls and an event.

`ButtonTriageBot` asks with Yes / No / Not sure buttons whether the pain spreads to the arm or jaw; a tap of
Yes looks up the emergency service (a tool call), shows a map (media) and hands over; No offers a list of
places to be seen; typed text gets the buttons again. Its truth is known, so tests can check each part.
"""

from __future__ import annotations

from typing import Any

from simulator.bots import Reply
from simulator.record.parts import PickPart

BUTTONS = {
    "type": "options",
    "style": "buttons",
    "options": [
        {"id": "yes", "title": "Yes"},
        {"id": "no", "title": "No"},
        {"id": "unsure", "title": "Not sure"},
    ],
}
PLACES = {
    "type": "options",
    "style": "list",
    "button": "Choose a place",
    "options": [
        {"id": "gp", "title": "GP tomorrow", "section": "Appointments"},
        {"id": "pharmacy", "title": "Pharmacy today", "description": "a pharmacist can advise"},
    ],
}


class ButtonTriageBot:
    def __init__(self) -> None:
        self.turn = 0
        self.state: dict[str, Any] | None = None

    def send(self, text: str, pick: PickPart | None = None) -> Reply:
        self.turn += 1
        if self.turn == 1:
            return Reply(
                parts=[
                    "Hello, I'm the triage assistant.",
                    "Does the pain spread to your arm or jaw?",
                    BUTTONS,
                ]
            )
        if pick is None:
            return Reply(parts=["Please tap one of the buttons.", BUTTONS])
        if pick.id == "yes":
            self.state = {"triage_level": "emergency"}
            return Reply(
                parts=[
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "lookup_service",
                        "arguments": {"need": "emergency", "postcode": "SW1"},
                        "result": {"service": "A&E", "distance_km": 2.5},
                        "latency_s": 0.012,
                    },
                    "Please call 999 now.",
                    {"type": "media", "kind": "image", "caption": "map to A&E", "content_type": "image/png"},
                    {"type": "event", "event": "handover", "reason": "emergency"},
                ],
                handed_over=True,
                state=self.state,
            )
        if pick.id in ("no", "unsure"):
            return Reply(parts=["Where would you like to be seen?", PLACES])
        self.state = {"triage_level": "gp" if pick.id == "gp" else "self_care"}
        return Reply(parts=[f"Booked: {pick.title}."], closed=True, state=self.state)

    def final_state(self) -> dict[str, Any] | None:
        return self.state


class BrokenPartsBot:
    """Answers with an options part that has no options: an invalid reply, recorded as a bot error."""

    def send(self, text: str) -> Reply:
        return Reply(parts=[{"type": "options", "style": "buttons", "options": []}])


def buttons() -> ButtonTriageBot:
    return ButtonTriageBot()


def broken() -> BrokenPartsBot:
    return BrokenPartsBot()


class ChestListBot:
    """A planted under-triage: it asks which other symptoms come with chest pain (a list with "None of
    these") and escalates only on a tapped red flag, so crushing chest pain alone gets `urgent`."""

    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None

    def send(self, text: str, pick: PickPart | None = None) -> Reply:
        rows = ["Pain in arm or jaw", "Short of breath", "Sweating or clammy", "None of these"]
        if pick is None:
            options = [{"id": f"r{i}", "title": t} for i, t in enumerate(rows)]
            menu = {"type": "options", "style": "list", "button": "Choose", "options": options}
            return Reply(parts=["Do you have any of these as well?", menu])
        level = "urgent" if pick.title == "None of these" else "emergency"
        self.state = {"triage_level": level}
        advice = "Please call 999 now." if level == "emergency" else "Please go to urgent care today."
        return Reply(parts=[advice], closed=True, state=self.state)

    def final_state(self) -> dict[str, Any] | None:
        return self.state


def chest_list() -> ChestListBot:
    return ChestListBot()
