"""One conversation with a user the caller supplies (a person at the review desk), saved and judged as a
run folder like any other: the same loop, bot adapter, record and judges as `simulator run`.
"""

from __future__ import annotations

__all__ = ["run_live"]

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.bots import make_bot_factory
from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.engine.budget import ErrorBudget
from simulator.engine.conversation import ConversationPlan
from simulator.engine.progress import RunProgress
from simulator.engine.runner import new_manifest
from simulator.engine.session import CellRun, RunResult, RunSession, SessionParts
from simulator.judging.stage import make_judge_stage
from simulator.providers.hub import ModelHub
from simulator.record.folder import RunFolder
from simulator.record.manifest import Session
from simulator.users.base import SimulatedUser


async def run_live(
    suite: Suite, scenario: Scenario, user: SimulatedUser, user_model: str, out: Path
) -> RunResult:
    """Create the run folder `out` (manifest kind "simulation", models.user = `user_model`), hold one
    conversation of `scenario` with `user` through the suite's bot adapter, then judge it with the suite's
    judges. Returns when the conversation has ended and its verdicts are written."""
    one = suite.model_copy(update={"runs": 1})
    hub = ModelHub.create(one)
    bots: Any = None
    try:
        bots = make_bot_factory(one, hub.for_role("bot"))
        judges = make_judge_stage(one, [scenario], hub.for_role("judge"))
        manifest = new_manifest(one, [scenario], out.name, user_model, judges)
        manifest.source = {"desk": "talk to the bot", "user": user_model}
        folder = RunFolder.create(out, manifest)
        session = Session(command="run", started_at=datetime.now(UTC))
        manifest.sessions.append(session)
        folder.write_manifest(manifest)
        starter = getattr(bots, "start", None)  # a service bot the suite starts: its log in the run folder
        if starter is not None:
            await starter(folder.path)

        def make_user(plan: ConversationPlan, attempt: int) -> SimulatedUser:
            return user

        parts = SessionParts(
            one, {scenario.id: scenario}, folder, manifest, hub, judges, make_user, bots, user_model
        )
        cell = CellRun(parts, ErrorBudget(float("inf")), session)
        runner = RunSession([cell], RunProgress(1, enabled=False))
        [result] = await runner.run(iter([(cell, ConversationPlan(scenario, 0))]), 1)
        return result
    finally:
        await hub.aclose()
        closer = getattr(bots, "aclose", None)
        if closer is not None:
            await closer()
