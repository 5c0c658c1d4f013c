"""What happens to one work item: simulate it (a plan) and judge it, or only judge it (a stored record).

The session's worker pool hands items to an executor and records what comes back, so the same pool runs
items here (`LocalExecutor`) or on a Ray cluster (`engine/ray_backend.py`) with no second loop.
"""

from __future__ import annotations

__all__ = ["Done", "Executor", "ItemLost", "LocalExecutor", "SessionParts", "simulate_and_judge"]

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from simulator.bots.turn_limits import TurnLimits
from simulator.config.scenario import Scenario
from simulator.config.simulators import simulator_models, user_model_for
from simulator.config.suite import Suite
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.engine.fidelity_loop import run_audited, run_flagged
from simulator.judging.fidelity import FIDELITY_CHECKS, FidelityAuditor
from simulator.judging.stage import JudgeStage
from simulator.providers.hub import CallScope, ModelHub, set_scope
from simulator.record.folder import RunFolder
from simulator.record.manifest import Manifest
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.selection import counted

WorkItem = ConversationRecord | ConversationPlan


class ItemLost(Exception):
    """The item's worker died before it answered: nothing of it is recorded; a resume runs it again."""


@dataclass
class Done:
    """What one item produced: its conversation (new or stored), its new verdicts, and a judge failure to
    count against the error budget (None when the judges were fine)."""

    record: ConversationRecord
    verdicts: list[Verdict] = field(default_factory=list)
    simulated: bool = True
    judge_failure: str | None = None
    # The simulated user's fidelity verdicts (kind `fidelity`), written right after the record.
    fidelity: list[Verdict] = field(default_factory=list)


Stats = dict[str, dict[str, Any]]


class Executor(Protocol):
    async def process(
        self, item: WorkItem, judged: set[tuple[str, str]], audited: set[tuple[str, str]]
    ) -> Done: ...

    def call_stats(self) -> tuple[Stats, Stats]:
        """Calls and adaptive limits per provider so far, for the manifest."""
        ...

    async def aclose(self) -> None: ...


@dataclass
class SessionParts:
    """What a session works with; built once per command by the runner."""

    suite: Suite
    scenarios: dict[str, Scenario]
    folder: RunFolder
    manifest: Manifest
    hub: ModelHub
    judges: JudgeStage
    make_user: Callable[[ConversationPlan, int], Any] | None = None
    bots: Any = None
    user_model: str = ""
    auditor: FidelityAuditor | None = None  # audits the simulated user (user.fidelity)


async def _audit_stored(
    record: ConversationRecord,
    scenario: Scenario,
    auditor: FidelityAuditor,
    audited: set[tuple[str, str]],
) -> list[Verdict]:
    """Fidelity verdicts a stored conversation lacks (a re-judge, or a run recorded before its verdicts):
    the offline user's stored provenance is reused, exact; an LLM user is audited again."""
    if all((record.id, check) in audited for check in FIDELITY_CHECKS):
        return []
    exact = record.provenance and all(p.source == "offline" for p in record.provenance)
    audit = await auditor.audit(record, scenario, list(record.provenance) if exact else None)
    return [v for v in audit.verdicts if (record.id, v.criterion_id) not in audited]


async def simulate_and_judge(
    item: WorkItem,
    judged: set[tuple[str, str]],
    audited: set[tuple[str, str]] | None = None,
    *,
    suite: Suite,
    scenarios: dict[str, Scenario],
    judges: JudgeStage,
    make_user: Callable[[ConversationPlan, int], Any] | None,
    bots: Any,
    user_model: str,
    bot_name: str,
    run_id: str,
    auditor: FidelityAuditor | None = None,
) -> Done:
    """Run one item through the engine: the one implementation, wherever it runs."""
    since = time.monotonic()  # the item's age: its judge calls queue as old as its conversation

    async def judge(done: Done) -> Done:
        set_scope(CallScope(repeat=done.record.repeat, since=since))
        scenario = scenarios.get(done.record.scenario_id)
        if scenario is None:
            return done  # a scenario no longer in the suite: kept in the record, not judged
        if not done.simulated and auditor is not None:
            done.fidelity = await _audit_stored(done.record, scenario, auditor, audited or set())
        await _judge_into(done, scenario, judges, judged)
        return done

    if not isinstance(item, ConversationPlan):
        return await judge(Done(item, simulated=False))
    scope = CallScope(repeat=item.repeat, since=since)
    set_scope(scope)
    assert make_user is not None
    options: dict[str, Any] = {
        "max_character_breaks": suite.user.max_character_breaks,
        "user_model": user_model_for(item.scenario, simulator_models(suite), user_model),
        "bot_name": bot_name,
        "run_id": run_id,
        "limits": TurnLimits.of(suite.bot),  # every channel's turns under the suite's bot limits
        "outcome": suite.outcome,  # a decision that is not text is the bot's invalid_reply
    }
    if suite.environment is not None:
        options["environment"] = suite.environment  # one fresh environment per conversation
    if auditor is not None and suite.user.fidelity.on_fail != "regenerate":
        # Nothing waits on the audit: it runs beside the judges (fidelity_loop.run_flagged).
        record, fidelity, done = await run_flagged(
            item, make_user, bots, auditor, lambda record: judge(Done(record)), **options
        )
        done.fidelity = fidelity
    else:
        fidelity = []
        if auditor is None:
            record = await run_conversation(item, make_user, bots, **options)
        else:
            record, fidelity = await run_audited(
                item, make_user, bots, auditor, suite.user.fidelity, **options
            )
        done = await judge(Done(record, fidelity=fidelity))
    if scope.cache_hits:
        record.cache_hits = dict(scope.cache_hits)
    return done


async def _judge_into(
    done: Done, scenario: Scenario, judges: JudgeStage, judged: set[tuple[str, str]]
) -> None:
    """The judges' verdicts of one conversation, and a judge failure to count against the error budget."""
    try:
        done.verdicts = await judges.judge(done.record, scenario, judged)
    except Exception as exc:  # a judge-stage bug must not end the run; resume judges it again
        done.judge_failure = f"judge stage raised {type(exc).__name__}: {exc}"
        return
    failed = [v for v in counted(done.verdicts) if v.result == "error"]
    if failed and done.record.stop_reason != "error":
        last = failed[-1]
        detail = f"{last.error.kind}: {last.error.message}" if last.error else last.reasoning
        done.judge_failure = f"judge {last.criterion_id}: {detail}"


class LocalExecutor:
    """Items run in this process, in the session's event loop."""

    def __init__(self, parts: SessionParts) -> None:
        self.parts = parts

    async def process(
        self, item: WorkItem, judged: set[tuple[str, str]], audited: set[tuple[str, str]]
    ) -> Done:
        parts = self.parts
        return await simulate_and_judge(
            item,
            judged,
            audited,
            suite=parts.suite,
            scenarios=parts.scenarios,
            judges=parts.judges,
            make_user=parts.make_user,
            bots=parts.bots,
            user_model=parts.user_model,
            bot_name=parts.manifest.models.bot,
            run_id=parts.manifest.run_id,
            auditor=parts.auditor,
        )

    def call_stats(self) -> tuple[Stats, Stats]:
        return self.parts.hub.stats(), self.parts.hub.limits()

    async def aclose(self) -> None:
        """Nothing to release: the runner closes the hub and the bots it made."""
