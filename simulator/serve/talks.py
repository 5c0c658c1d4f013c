"""Talk to the bot: conversations a person holds with the bot under test, each its own run folder.

Each talk runs the Python API's `atalk` (engine.live underneath) as a task on the server's event loop;
the person's messages reach the loop through a HumanUser. When the person ends the talk the conversation is saved and judged like a
simulated one.
"""

from __future__ import annotations

__all__ = ["Talk", "TalkDesk", "suite_files"]

import asyncio
import contextlib
import logging
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from simulator.api import Result, atalk, load_suite
from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.errors import UserError
from simulator.eventloop import within
from simulator.record.folder import new_run_id
from simulator.users.human import HumanUser

# The longest a reply from the bot may take before the page gives up waiting (the talk goes on).
REPLY_WAIT_S = 120.0
_LOGGER = logging.getLogger("simulator.serve")
# A talk nobody has written in for this long was abandoned (a closed tab): it is ended, saved and judged,
# so its run folder does not stay `running` for ever.
TALK_IDLE_S = 30 * 60.0


def suite_files(root: Path | None) -> list[Path]:
    """Every suite.yaml under the scenarios folder."""
    if root is None or not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.name in ("suite.yaml", "suite.yml"))


def load_suite_scenarios(suite_file: Path) -> tuple[Suite, list[Scenario]]:
    """The suite and the scenarios it runs (persona-factor variants included), to talk through."""
    suite = load_suite(suite_file)
    return suite, suite.scenarios_to_run()


@dataclass
class Talk:
    id: str
    suite: Suite
    scenario: Scenario
    human: HumanUser
    folder: Path
    task: asyncio.Task[Result]
    last_active: float = 0.0
    abandoned: bool = False

    @property
    def ended(self) -> bool:
        return self.task.done()

    def failure(self) -> str | None:
        """Why the talk could not run (a bad suite, a bot that cannot start), when it failed."""
        if not self.task.done() or self.task.cancelled():
            return None
        exc = self.task.exception()
        if exc is None:
            return None
        return str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"


class TalkDesk:
    """The talks of this desk, by id; run folders go under the runs folder."""

    def __init__(self, runs_dir: Path, idle_s: float = TALK_IDLE_S) -> None:
        self.runs_dir = runs_dir
        self.talks: dict[str, Talk] = {}
        self.idle_s = idle_s
        self._sweeper: asyncio.Task[None] | None = None
        self.sweep_failures = 0  # sweeps that raised and were tried again

    async def expire_idle(self) -> list[Talk]:
        """End every talk idle for longer than `idle_s`, marked abandoned; return them."""
        now = time.monotonic()
        idle = [t for t in self.talks.values() if not t.ended and now - t.last_active > self.idle_s]
        for talk in idle:
            talk.abandoned = True
            try:
                await talk.human.finish()
            except Exception as exc:
                self.sweep_failures += 1
                _LOGGER.warning("desk: ending idle talk %s failed (%s: %s)", talk.id, type(exc).__name__, exc)
        return idle

    async def _sweep(self) -> None:
        """Supervised: a sweep that raises (one talk's end failed) is logged and the next one runs, so the
        other idle talks are still ended and saved."""
        while any(not t.ended for t in self.talks.values()):
            await asyncio.sleep(min(60.0, self.idle_s / 2))
            try:
                await self.expire_idle()
            except Exception as exc:
                self.sweep_failures += 1
                _LOGGER.warning(
                    "desk: ending idle talks failed (%s: %s); trying again", type(exc).__name__, exc
                )
        self._sweeper = None

    async def start(self, suite_file: Path, scenario_id: str, person: str) -> Talk:
        suite, scenarios = load_suite_scenarios(suite_file)
        scenario = next((s for s in scenarios if s.id == scenario_id), None)
        if scenario is None:
            raise UserError(f"{suite_file}: no scenario '{scenario_id}' in this suite")
        human = HumanUser(person)
        folder = self.runs_dir / new_run_id(f"talk-{suite.name}")
        task = asyncio.create_task(atalk(suite, scenario, human, human.model, folder))
        talk = Talk(secrets.token_urlsafe(12), suite, scenario, human, folder, task, time.monotonic())
        self.talks[talk.id] = talk
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep())
        await talk.human.wait_for_turn(task)
        return talk

    def get(self, talk_id: str) -> Talk:
        talk = self.talks.get(talk_id)
        if talk is None:
            raise UserError("no such talk (the desk was restarted?); start a new one")
        return talk

    async def say(self, talk: Talk, text: str) -> None:
        """Send the person's message and wait for the bot's answer (or the end of the conversation)."""
        if talk.ended:
            raise UserError("this conversation has ended; start a new one")
        talk.last_active = time.monotonic()
        await talk.human.say(text)
        await self._wait_for_reply(talk)

    async def tap(self, talk: Talk, option_id: str) -> None:
        """Tap one of the options the bot offered, and wait for its answer."""
        if talk.ended:
            raise UserError("this conversation has ended; start a new one")
        talk.last_active = time.monotonic()
        await talk.human.tap(option_id)
        await self._wait_for_reply(talk)

    async def _wait_for_reply(self, talk: Talk) -> None:
        # A slow bot: after REPLY_WAIT_S the page shows the talk so far, and the reply once it arrives.
        with contextlib.suppress(TimeoutError):
            await within(talk.human.wait_for_turn(talk.task), REPLY_WAIT_S)

    async def end(self, talk: Talk) -> Result | None:
        """End the conversation, wait for its verdicts, and return the result (None if it failed)."""
        if not talk.ended:
            await talk.human.finish()
        try:
            return await asyncio.shield(talk.task)
        except Exception:  # the failure is shown from talk.failure()
            return None
