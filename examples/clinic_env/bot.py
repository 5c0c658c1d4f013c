"""A rule-based clinic front-desk bot that acts through the environment API (docs/environment.md).

It asks for the person's name and looks them up, asks them to read their thermometer, asks about their
breathing, then decides: trouble breathing is an emergency (escalate to the nurse, hand over), a
temperature of 39 or more is urgent (book an urgent appointment), anything else a routine GP appointment.
Every back-end action is a call of `env.result(tool, **arguments)`, which the engine records as a tool call.

**Its documented flaw:** when the person is not on the register (the lookup fails), it cannot book, but it
still tells them "I've booked you an ... appointment". The claims-vs-actions check (`claim.booked`) and
`expected.environment` catch it in the `unregistered` scenarios.
"""

from __future__ import annotations

import re
from typing import Any

from simulator.bots import Reply
from simulator.bots.environment import Environment, ToolError

_NAME = re.compile(r"\bname is ([A-Z][a-z]+(?: [A-Z][a-z]+)+)")
_NUMBER = re.compile(r"\b(3\d(?:\.\d)?|4[0-2](?:\.\d)?)\b")
_BREATHING = re.compile(r"\b(struggl\w*|breathless|can't breathe|short of breath|breath\w*)\b", re.I)
_NO = re.compile(r"\b(no|not|don't|nope)\b", re.I)


class ClinicBot:
    """One conversation: collects name, temperature and breathing, then acts and advises."""

    def __init__(self, env: Environment | None) -> None:
        self.env = env
        self.step = 0
        self.name: str | None = None
        self.patient: dict[str, Any] | None = None
        self.temperature: float | None = None
        self.breathing = False
        self.disposition: str | None = None
        self.heard: list[str] = []

    def _call(self, tool: str, /, **arguments: Any) -> Any:
        """A back-end call through the environment; None when it failed (the failure is recorded)."""
        if self.env is None:
            return None
        try:
            return self.env.result(tool, **arguments)
        except ToolError:
            return None

    def send(self, text: str) -> Reply:
        self.step += 1
        self.heard.append(text)
        if self.step == 1:
            return Reply(messages=["Hello, this is the clinic. What is your full name, as registered here?"])
        if self.step == 2:
            # The name may have come in the first message, before it was asked for.
            match = next((m for m in map(_NAME.search, reversed(self.heard)) if m), None)
            self.name = match.group(1) if match else text.strip().rstrip(".")
            self.patient = self._call("lookup_patient", name=self.name)
            return Reply(
                messages=["Thank you. Could you take your temperature with a thermometer and tell me?"]
            )
        if self.step == 3:
            number = _NUMBER.search(text)
            self.temperature = float(number.group(1)) if number else None
            return Reply(messages=["Are you struggling to breathe at the moment?"])
        self.breathing = bool(_BREATHING.search(text)) and not _NO.search(text)
        return self._decide()

    def _decide(self) -> Reply:
        patient_id = self.patient["id"] if self.patient else "unregistered"
        if self.breathing:
            self.disposition = "emergency"
            service = self._call("find_service", need="emergency") or {}
            self._call("escalate_to_nurse", patient_id=patient_id, reason="struggling to breathe")
            self._call("record_disposition", patient_id=patient_id, disposition="emergency")
            where = service.get("name", "the emergency department")
            text = f"I recommend you call 999 or go to {where} now. I've escalated this to the duty nurse."
            return Reply(
                parts=[text, {"type": "event", "event": "handover", "reason": "breathing difficulty"}],
                handed_over=True,
                state={"disposition": self.disposition},
            )
        urgent = self.temperature is not None and self.temperature >= 39
        self.disposition = "urgent" if urgent else "gp"
        urgency = "urgent" if urgent else "routine"
        service = self._call("find_service", need=self.disposition) or {}
        where = service.get("name", "the surgery")
        slot = "soon"
        if self.patient is not None:  # THE FLAW: an unregistered person is told they are booked anyway
            booking = self._call("book_appointment", patient_id=patient_id, service=where, urgency=urgency)
            slot = (booking or {}).get("slot", slot)
            self._call("record_disposition", patient_id=patient_id, disposition=self.disposition)
        article = "an" if urgency == "urgent" else "a"
        text = (
            f"I've booked you {article} {urgency} appointment at {where} ({slot}). "
            "I recommend you rest and drink fluids until then."
        )
        return Reply(messages=[text], closed=True, state={"disposition": self.disposition})


def make_bot(env: Environment | None = None) -> ClinicBot:
    """The factory the suite names; the engine passes the conversation's environment as `env`."""
    return ClinicBot(env)
