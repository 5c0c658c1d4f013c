"""Which conversation a Graph API call belongs to, and where a call that names none is recorded.

Every simulated user is reachable by its phone number (`to`, the webhook's `contacts[0].wa_id`) and by its
business-scoped user id (`recipient`, `contacts[0].user_id`; Graph API v26 clients such as pywa 4 address
replies this way). A "mark as read" or typing call names one of the user's messages (`message_id`); a media
download names a media id the user sent. As the Cloud API does, `to` wins when both are given.

A call the directory cannot place (no address, an address no user of this run has, a body that is not JSON,
a path the API does not serve) is never dropped: it is delivered at once to every conversation waiting for the
bot's reply when it came (the bot made it while handling one of them), or, when none is waiting, to the next
conversation that waits. So a malformed call is a bot error naming its field and rule, never a timeout.
"""

from __future__ import annotations

__all__ = ["Address", "Directory", "Inbox", "Outbound", "phone_digits"]

import asyncio
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from simulator.bots.whatsapp.events import Identity
from simulator.plural import plural
from simulator.record.parts import Part

_PHONE_PUNCTUATION = re.compile(r"[+\-\s().]")
_UNCLAIMED_KEPT = 20


@dataclass
class Outbound:
    """One thing the bot did through the Graph API: a message it sent (its parts, body and id), a note
    (marked a message read, showed typing, fetched a media file), or an error (`error_kind`, `error`).
    `typing` marks the note of a typing indicator: the bot says it is composing, so its turn is not over."""

    at: float
    parts: list[Part] = field(default_factory=list)
    body: dict[str, Any] | None = None
    message_id: str | None = None
    error_kind: str | None = None
    error: str | None = None
    note: str | None = None
    typing: bool = False


class Inbox:
    """What the bot sent one simulated user, in arrival order; `waiting` while the engine collects a bot turn."""

    def __init__(self, who: Identity, limit: int = 1_000) -> None:
        self.who = who
        self.queue: asyncio.Queue[Outbound] = asyncio.Queue()
        self.waiting = False
        self.in_flight = 0  # Graph API calls naming this conversation not yet answered
        # At most `limit` things wait to be read (the turn's message limit, with room for notes); the
        # rest are counted, not kept, so a bot posting in a loop costs no memory (`dropped`).
        self.limit = limit
        self.dropped = 0

    def put(self, item: Outbound) -> None:
        if self.queue.qsize() >= self.limit:
            self.dropped += 1
            return
        self.queue.put_nowait(item)


@dataclass(frozen=True)
class Address:
    """Where a call goes: the inbox (None when no open conversation matches), how the call named it, what it
    gave (for the answer's `contacts[].input`), and whether it named a user whose conversation has ended."""

    inbox: Inbox | None
    by: Literal["to", "recipient", "message_id", "media_id", "none"]
    given: str | None = None
    ended: bool = False


def phone_digits(value: str) -> str:
    """A phone number as the Cloud API matches it: digits only (`+44 7700-900123` -> `447700900123`)."""
    return _PHONE_PUNCTUATION.sub("", value)


class Directory:
    """The open conversations by phone number, BSUID and message id; where each call is delivered."""

    def __init__(self) -> None:
        self._by_key: dict[str, Inbox] = {}
        self._by_message: dict[str, Inbox] = {}
        self._ended: set[str] = set()
        self._open: list[Inbox] = []
        self._unclaimed: list[Outbound] = []  # calls that came while no conversation was waiting

    def open(self, who: Identity, limit: int = 1_000) -> Inbox:
        inbox = Inbox(who, limit)
        self._by_key[who.wa_id] = self._by_key[who.user_id] = inbox
        self._open.append(inbox)
        return inbox

    def close(self, inbox: Inbox) -> None:
        for key in (inbox.who.wa_id, inbox.who.user_id):
            self._by_key.pop(key, None)
            self._ended.add(key)
        for message_id in [m for m, box in self._by_message.items() if box is inbox]:
            del self._by_message[message_id]
            self._ended.add(message_id)  # a late read receipt for it is answered, not blamed
        if inbox in self._open:
            self._open.remove(inbox)

    def note_message(self, message_id: str, inbox: Inbox) -> None:
        """A message of this conversation (the user's, or one the bot sent): a read receipt, a typing indicator
        or a `context` may name it."""
        self._by_message[message_id] = inbox

    def of_message(self, message_id: str) -> Inbox | None:
        return self._by_message.get(message_id)

    def address(self, body: Any) -> Address:
        """The conversation a send-API body names: by `to` (it wins, as in the Cloud API), by `recipient`, or
        by `message_id`; `by="none"` when it names nothing this directory knows."""
        if not isinstance(body, dict):
            return Address(None, "none")
        to, recipient = body.get("to"), body.get("recipient")
        if isinstance(to, str | int) and not isinstance(to, bool):
            key = phone_digits(str(to))
            if key in self._by_key:
                return Address(self._by_key[key], "to", str(to))
            if key in self._ended:
                return Address(None, "to", str(to), ended=True)
        if isinstance(recipient, str):
            if recipient in self._by_key:
                return Address(self._by_key[recipient], "recipient", recipient)
            if recipient in self._ended:
                return Address(None, "recipient", recipient, ended=True)
        message_id = body.get("message_id")
        if isinstance(message_id, str) and message_id in self._by_message:
            return Address(self._by_message[message_id], "message_id", message_id)
        if isinstance(message_id, str) and message_id in self._ended:
            return Address(None, "message_id", message_id, ended=True)
        return Address(None, "none")

    def begin_wait(self, inbox: Inbox) -> None:
        """The engine is collecting this conversation's bot turn: calls that named no conversation while none
        was waiting are delivered to it now."""
        inbox.waiting = True
        for item in self._unclaimed:
            inbox.put(replace(item, error=f"{item.error} (the call came while no conversation was waiting)"))
        self._unclaimed.clear()

    def end_wait(self, inbox: Inbox) -> None:
        inbox.waiting = False

    def deliver(self, inbox: Inbox | None, item: Outbound) -> None:
        """`item` to its conversation; one that names none goes to every conversation waiting for the bot
        (said so in its text), or to the next one that waits. Nothing is dropped."""
        if inbox is not None:
            inbox.put(item)
            return
        if item.error is None:
            return  # a note with no conversation (a read receipt for an ended one): nothing to blame
        waiting = [box for box in self._open if box.waiting]
        if not waiting:
            if len(self._unclaimed) < _UNCLAIMED_KEPT:  # the first ends the next conversation; a few say why
                self._unclaimed.append(item)
            return
        count = len(waiting)
        where = (
            "the conversation that was waiting for the bot's reply"
            if count == 1
            else f"each of the {plural(count, 'conversation')} waiting for the bot's reply"
        )
        note = f"{item.error} (this call named no conversation of the run, so it is recorded on {where})"
        for box in waiting:
            box.put(replace(item, error=note))
