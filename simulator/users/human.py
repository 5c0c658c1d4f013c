"""A person in the user's seat: the review desk's "talk to the bot", where a clinician plays the scenario.

The conversation loop asks `next_message` as it asks a simulated user; the desk answers through `say` and
`finish`. The loop, the bot adapter, the record and the judges are the same as for a simulated run.
"""

from __future__ import annotations

__all__ = ["HumanUser"]

import asyncio
from typing import Any

from simulator.errors import UserError
from simulator.record.parts import PickPart, last_options
from simulator.record.transcript import Turn
from simulator.users.base import END, UserMessage


class HumanUser:
    """Messages typed by a person, handed over one at a time; `finish` ends the conversation (user_done)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.turns: list[Turn] = []  # the loop's own list: the desk shows it as the conversation grows
        self._inbox: asyncio.Queue[str | PickPart | None] = asyncio.Queue()
        self._waiting = asyncio.Event()  # set while the loop waits for the person (the bot has answered)

    @property
    def model(self) -> str:
        """How the record names the user: `human:<name>`."""
        return f"human:{self.name}"

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        self.turns = turns
        self._waiting.set()
        text = await self._inbox.get()
        self._waiting.clear()
        if text is None:
            return UserMessage(text=END, done=True, model=self.model)
        if isinstance(text, PickPart):
            return UserMessage(text=text.title, pick=text, model=self.model)
        return UserMessage(text=text, model=self.model)

    async def say(self, text: str) -> None:
        """Hand the loop the person's next message."""
        self._waiting.clear()
        await self._inbox.put(text)

    def offered(self) -> list[tuple[str, str]]:
        """The options on the person's screen now: (id, title) of the bot's last options part."""
        bot_turns = [turn for turn in self.turns if turn.role == "bot"]
        options = last_options(bot_turns[-1].parts) if bot_turns else []
        return [(option.id, option.title) for option in options]

    async def tap(self, option_id: str) -> None:
        """Hand the loop the option the person tapped; only an option on screen can be tapped."""
        titles = dict(self.offered())
        if option_id not in titles:
            raise UserError(
                f"option {option_id!r} is not on screen; the bot offered {sorted(titles) or 'none'}"
            )
        self._waiting.clear()
        await self._inbox.put(PickPart(id=option_id, title=titles[option_id]))

    async def finish(self) -> None:
        """End the conversation: the person has what they came for (or gives up)."""
        self._waiting.clear()
        await self._inbox.put(None)

    async def wait_for_turn(self, done: asyncio.Future[Any]) -> None:
        """Wait until the loop asks for the next message, or the conversation ended (`done`)."""
        waiter: asyncio.Future[Any] = asyncio.ensure_future(self._waiting.wait())
        try:
            await asyncio.wait({waiter, done}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
