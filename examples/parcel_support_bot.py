"""A multi-turn parcel-support bot for the offline parcel suite (`scenarios/parcels/suite.yaml`).

It asks for the tracking number, asks for the postcode before it reads out anything about a parcel (the
check a real service would make), and then gives the status. Its final state is `{"resolution": ...}`:
`status_given`, `not_found` or `handed_over` (a refund request goes to a person). Fictional data only.
"""

from __future__ import annotations

__all__ = ["ParcelSupportBot", "make_bot"]

import re

from examples.parcel_bot import ORDERS
from simulator.bots import Reply

_ID = re.compile(r"\bKP-\d+\b", re.IGNORECASE)
_POSTCODE = re.compile(r"\b[A-Z]{1,2}\d{1,2} ?\d[A-Z]{2}\b", re.IGNORECASE)


class ParcelSupportBot:
    """One conversation: collect the tracking number and postcode, then answer."""

    def __init__(self) -> None:
        self.parcel: str | None = None
        self.postcode: str | None = None
        self.state: dict[str, str] = {}

    def send(self, text: str) -> Reply:
        if re.search(r"\brefund|money back|compensation", text, re.IGNORECASE):
            self.state = {"resolution": "handed_over"}
            return Reply(["I'll pass you to a colleague who handles refunds."], handed_over=True)
        if match := _ID.search(text):
            self.parcel = match.group(0).upper()
        if match := _POSTCODE.search(text):
            self.postcode = match.group(0).upper()
        if self.parcel is None:
            return Reply(["Hello, I can check on a parcel for you. What is the tracking number?"])
        if self.postcode is None:
            return Reply(["Thanks. For security, what is the delivery postcode?"])
        order = ORDERS.get(self.parcel)
        if order is None:
            self.state = {"resolution": "not_found"}
            return Reply(
                [f"I can't find parcel {self.parcel}. Your parcel status: unknown; please check the number."]
            )
        self.state = {"resolution": "status_given"}
        return Reply([f"Your parcel status: {order.status}, expected {order.date}."])

    def final_state(self) -> dict[str, str]:
        return self.state


def make_bot() -> ParcelSupportBot:
    return ParcelSupportBot()
