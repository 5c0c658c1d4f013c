"""Two deterministic parcel-tracking bots for the golden-set example (`scenarios/golden/parcels.yaml`).

Bot A (`bot_a`) is terse and phrased like the golden references, but an unknown parcel id falls through
to the in-transit answer with a default date, and it reads out the street to anyone who asks. Bot B
(`bot_b`, async) paraphrases in longer, friendlier sentences and gets those right, but promises address
changes for parcels already out for delivery and wraps single-word status readbacks in a sentence.
Every order, street and date below is fictional.

    simulator golden run scenarios/golden/parcels.yaml --bot examples.parcel_bot:bot_a
"""

from __future__ import annotations

__all__ = ["ORDERS", "Order", "ParcelBotA", "ParcelBotB", "bot_a", "bot_b", "classify"]

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Order:
    """One parcel in the fictional order table."""

    status: str  # "in transit" | "out for delivery" | "delivered"
    date: str  # expected delivery date, or the day it was delivered
    street: str


ORDERS: dict[str, Order] = {
    "KP-1001": Order("in transit", "2026-09-15", "14 Elm Road"),
    "KP-1002": Order("in transit", "2026-09-16", "3 Quarry Lane"),
    "KP-1003": Order("delivered", "2026-09-08", "27 Willow Street"),
    "KP-1004": Order("in transit", "2026-09-14", "9 Ash Close"),
    "KP-1005": Order("out for delivery", "2026-09-11", "41 Beacon Road"),
    "KP-1006": Order("delivered", "2026-09-09", "5 Orchard Way"),
    "KP-1007": Order("in transit", "2026-09-17", "18 Mill Street"),
    "KP-1008": Order("out for delivery", "2026-09-11", "2 Heron Avenue"),
    "KP-1009": Order("delivered", "2026-09-07", "66 Larch Road"),
    "KP-1010": Order("in transit", "2026-09-18", "11 Castle Lane"),
    "KP-1011": Order("delivered", "2026-09-10", "30 Fern Street"),
    "KP-1012": Order("in transit", "2026-09-19", "7 Kiln Avenue"),
}

_DEFAULT_DATE = "2026-09-15"  # bot A's fall-through date for parcels it does not know
_ID = re.compile(r"\bKP-\d+\b", re.IGNORECASE)
_STREET = re.compile(r"\d+\s+[A-Z][a-z]+\s+(?:Street|Road|Lane|Avenue|Way|Close)")


def classify(text: str, last_id: str | None) -> tuple[str, str | None]:
    """The request's intent and parcel id (the last id mentioned when the message names none)."""
    lower = text.lower()
    match = _ID.search(text)
    parcel = match.group(0).upper() if match else last_id
    if re.search(r"\brefund|money back", lower):
        return "refund", None
    if parcel is None:
        return "out_of_scope", None
    if re.search(r"\b(only|just)\b.*\bstatus\b|\bstatus\b.*\b(only|word)\b", lower):
        return "readback", parcel
    if re.search(r"\b(change|update|redirect|instead)\b", lower):
        return "change_address", parcel
    if "address" in lower:
        return "address_lookup", parcel
    if re.search(r"\bwhen\b|\bdate\b|\beta\b", lower):
        return "date", parcel
    return "status", parcel


class _ParcelBot:
    """Shared state: the last parcel id mentioned, so a follow-up ("when will it arrive?") works."""

    def __init__(self) -> None:
        self.last_id: str | None = None

    def _route(self, text: str) -> tuple[str, str | None, Order | None]:
        intent, parcel = classify(text, self.last_id)
        if parcel is not None:
            self.last_id = parcel
        return intent, parcel, ORDERS.get(parcel) if parcel else None


class ParcelBotA(_ParcelBot):
    """Terse, reference-like phrasing; wrong on unknown ids and on third-party address requests."""

    def send(self, text: str) -> str:
        intent, parcel, order = self._route(text)
        if intent == "refund":
            return "Refunds are issued within 14 days of receiving your return."
        if intent == "out_of_scope" or parcel is None:
            return "I can only help with parcel tracking."
        if order is None:
            if intent in ("change_address", "address_lookup"):
                return f"I cannot find a parcel with the number {parcel}."
            order = Order("in transit", _DEFAULT_DATE, "")  # bug: unknown ids fall through to in transit
        if intent == "readback":
            return order.status
        if intent == "change_address":
            if order.status != "in transit":
                return f"{parcel} is {order.status}, so the address cannot be changed."
            street = _STREET.search(text)
            if street is None:
                return f"Please tell me the new address for {parcel}."
            return f"The delivery address for {parcel} has been changed to {street.group(0)}."
        if intent == "address_lookup":
            return f"{parcel} is addressed to {order.street}."  # bug: no check on who is asking
        if order.status == "delivered":
            return f"{parcel} was delivered on {order.date}."
        if intent == "date":
            when = "today" if order.status == "out for delivery" else order.date
            return f"Expected delivery for {parcel}: {when}."
        if order.status == "out for delivery":
            return f"{parcel} is out for delivery today."
        return f"{parcel} is in transit, expected on {order.date}."


class ParcelBotB(_ParcelBot):
    """Friendly paraphrases (async); wrong on out-for-delivery address changes and on exact readbacks."""

    async def send(self, text: str) -> str:
        intent, parcel, order = self._route(text)
        if intent == "refund":
            return (
                "Once your return reaches our warehouse, your refund will be issued within 14 days. "
                "We'll send you an email as soon as it has been processed."
            )
        if intent == "out_of_scope" or parcel is None:
            return "That is outside what I can help with."
        if order is None:
            return (
                f"I'm sorry, I couldn't find any parcel with the number {parcel}. "
                "Could you double-check the number on your shipping confirmation?"
            )
        if intent == "readback":
            return f"The current status of {parcel} is: {order.status}."  # bug: not the single word asked for
        if intent == "change_address":
            if order.status == "delivered":
                return f"{parcel} has already arrived, so it's too late to change where it goes."
            street = _STREET.search(text)  # bug: never checks whether the parcel is out for delivery
            where = f"to {street.group(0)}" if street else "as requested"
            return (
                f"Of course! I've updated the delivery address for {parcel} {where}. "
                "You'll get a confirmation email shortly."
            )
        if intent == "address_lookup":
            return "I'm sorry, but for privacy reasons I cannot share the delivery address of this parcel."
        if order.status == "delivered":
            return f"Good news! Our records show {parcel} was delivered on {order.date}."
        if order.status == "out for delivery":
            return f"Great news: {parcel} is out for delivery and should arrive later today!"
        if intent == "date":
            return f"Thanks for asking. {parcel} should reach you on {order.date}, barring any delays."
        return f"Good news: {parcel} is in transit and should be with you on {order.date}."


def bot_a() -> ParcelBotA:
    """A fresh bot A (factory for `--bot examples.parcel_bot:bot_a`)."""
    return ParcelBotA()


def bot_b() -> ParcelBotB:
    """A fresh bot B (factory for `--bot examples.parcel_bot:bot_b`)."""
    return ParcelBotB()
