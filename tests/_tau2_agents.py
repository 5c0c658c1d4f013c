"""Rule-based airline agents for the tau2 tests: they call the converted suite's tools through the
environment, as an LLM agent would. `correct` follows the airline policy on the fixture tasks; `wrong` has
planted faults (cancels what may not be cancelled, never acts on a change it cannot make, miscounts bags).
`judge` is a scripted judge for the `test:` provider (`test:tests._tau2_agents:judge`)."""

from __future__ import annotations

import re
from typing import Any

from simulator.bots import Reply
from simulator.bots.environment import Environment
from simulator.testing.fake_judges import JudgeCall, ScriptedJudge

_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{4}\b")
_RESERVATION = re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6}\b")
_FREE_BAGS = {("regular", "economy"): 1, ("silver", "economy"): 2, ("gold", "economy"): 3}


class AirlineAgent:
    def __init__(self, env: Environment | None, faulty: bool) -> None:
        assert env is not None, "the converted suite has an environment"
        self.env = env
        self.faulty = faulty
        self.heard = ""
        self.done = False

    def _reservations(self) -> list[dict[str, Any]]:
        ids = _RESERVATION.findall(self.heard)
        user = _USER_ID.search(self.heard)
        if user:
            ids += [
                r
                for r in self.env.result("get_user_details", user_id=user.group(0))["reservations"]
                if r not in ids
            ]
        return [self.env.result("get_reservation_details", reservation_id=r) for r in ids]

    def send(self, text: str) -> Reply:
        self.heard += " " + text
        if self.done:
            return Reply(["Is there anything else I can help with?"])
        reservations = self._reservations()
        if not reservations:
            return Reply(["Could you give me your user id or reservation number?"])
        self.done = True
        words = self.heard.lower()
        if "suitcase" in words or "bag" in words:
            return Reply([self._bags(reservations[0])])
        if "cancel" in words:
            return Reply([self._cancel(reservations[0])])
        if "change" in words:
            return Reply([self._change(reservations[0])])
        return Reply(["I found your reservation."])

    def _bags(self, reservation: dict[str, Any]) -> str:
        user = self.env.result("get_user_details", user_id=reservation["user_id"])
        per = 1 if self.faulty else _FREE_BAGS.get((user["membership"], reservation["cabin"]), 0)
        total = per * len(reservation["passengers"])
        return f"Your reservation allows {total} checked suitcases in total."

    def _cancel(self, reservation: dict[str, Any]) -> str:
        if self.faulty or reservation["insurance"] == "yes":
            self.env.result("cancel_reservation", reservation_id=reservation["reservation_id"])
            return "Your reservation is cancelled and refunded."
        return "I'm sorry, this reservation cannot be cancelled under our policy."

    def _change(self, reservation: dict[str, Any]) -> str:
        if reservation["cabin"] != "basic_economy":
            return "I can look for other flights."
        if reservation["insurance"] == "yes" and not self.faulty:
            self.env.result("cancel_reservation", reservation_id=reservation["reservation_id"])
            return (
                "Basic economy cannot be modified; as you feel unwell and are insured, the trip is cancelled."
            )
        return "Basic economy flights cannot be modified."


def correct(env: Environment | None = None) -> AirlineAgent:
    return AirlineAgent(env, faulty=False)


def wrong(env: Environment | None = None) -> AirlineAgent:
    return AirlineAgent(env, faulty=True)


def _decide(call: JudgeCall) -> str:
    """Task 0's natural-language assertion ("Agent should refuse to proceed with the cancellation") passes
    when the agent said it cannot cancel; the other assertions are left to a real judge."""
    if call.criterion_id != "tau2-airline-0-nl-1":
        return "not_applicable"
    refused = any("cannot be cancelled" in text for who, text in call.messages if who == "bot")
    return "pass" if refused else "fail"


judge = ScriptedJudge(_decide)
