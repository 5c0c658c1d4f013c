"""`--backend ray`: conversations run in a pool of async Ray actors, with the same engine code.

Each actor builds its own hub, simulated users, bot adapters and judge stage from the suite and runs items
through `executor.simulate_and_judge`, the one implementation the local backend uses too. Records come
back to the driver, which appends them to the run folder as they finish, so a driver or worker crash
loses at most what was in flight and `simulator run --resume` finishes the run. Provider request budgets
(`providers.<name>.rpm`) are run-wide: each of the N actors gets 1/N of them, so N workers never make N
times the calls a provider allows.
"""

from __future__ import annotations

__all__ = ["RayBackendOptions", "start_ray_executor"]

import itertools
import os
from dataclasses import dataclass
from typing import Any

from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.engine.conversation import ConversationPlan
from simulator.engine.executor import Done, ItemLost, SessionParts, WorkItem, simulate_and_judge
from simulator.engine.worker_share import worker_share
from simulator.errors import UserError
from simulator.record.models import ConversationRecord

INSTALL = 'install Ray to use --backend ray: pip install -e ".[ray]" (from the simulator checkout)'


@dataclass
class RayBackendOptions:
    address: str | None = None  # None: start a local Ray; "auto" or "ray://host:10001": join one
    workers: int | None = None  # None: one actor per CPU of the cluster


def _ray() -> Any:
    # Ray's gRPC threads and a later fork (a started bot, `--workers`) do not mix: with gRPC's fork handlers on,
    # a child forked while those threads run can die with SIGSEGV before it execs. Nothing forked here uses gRPC.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    try:
        import ray
    except ImportError:
        raise UserError(INSTALL) from None
    return ray


class Worker:
    """One Ray actor: a whole engine (hub, users, bots, judges) running many items concurrently."""

    def __init__(self, suite: Suite, scenarios: list[Scenario], user_model: str, bot_name: str, run_id: str):
        from simulator.bots import make_bot_factory
        from simulator.engine.roles import make_auditor, user_factory
        from simulator.judging.stage import make_judge_stage
        from simulator.providers.hub import ModelHub

        self.suite = suite
        self.scenarios = {s.id: s for s in scenarios}
        self.hub = ModelHub.create(suite)
        self.make_user = user_factory(suite, self.hub.for_role("user"), user_model)
        self.bots = make_bot_factory(suite, self.hub.for_role("bot"))
        self.judges = make_judge_stage(suite, scenarios, self.hub.for_role("judge"), warn=False)
        self.auditor = make_auditor(suite, self.hub, user_model)
        self.user_model, self.bot_name, self.run_id = user_model, bot_name, run_id

    async def process(
        self, item: tuple[str, int] | ConversationRecord, judged: list[str], audited: list[str]
    ) -> Done:
        work: WorkItem = item if isinstance(item, ConversationRecord) else self._plan(*item)
        key = work.id
        return await simulate_and_judge(
            work,
            {(key, criterion) for criterion in judged},
            {(key, check) for check in audited},
            suite=self.suite,
            scenarios=self.scenarios,
            judges=self.judges,
            make_user=self.make_user,
            bots=self.bots,
            user_model=self.user_model,
            bot_name=self.bot_name,
            run_id=self.run_id,
            auditor=self.auditor,
        )

    def _plan(self, scenario_id: str, repeat: int) -> ConversationPlan:
        return ConversationPlan(self.scenarios[scenario_id], repeat)

    def stats(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.hub.stats(), self.hub.limits()

    async def close(self) -> None:
        await self.hub.aclose()
        closer = getattr(self.bots, "aclose", None)
        if closer is not None:
            await closer()


class RayExecutor:
    """Hands items to the actors in turn; a dead actor's item is lost (recorded nowhere) and the actor is
    not used again. Call counts are read back from the actors when the session closes."""

    def __init__(self, ray: Any, actors: list[Any], started_ray: bool) -> None:
        self._ray = ray
        self.actors = list(actors)
        self._turn = itertools.cycle(range(len(actors)))
        self._dead: set[int] = set()
        self._started_ray = started_ray
        self.calls: dict[str, dict[str, Any]] = {}
        self.limits: dict[str, dict[str, Any]] = {}

    async def process(
        self, item: WorkItem, judged: set[tuple[str, str]], audited: set[tuple[str, str]]
    ) -> Done:
        index = self._next_alive()
        payload = item if isinstance(item, ConversationRecord) else (item.scenario.id, item.repeat)
        mine = [criterion for conversation, criterion in judged if conversation == item.id]
        checks = [check for conversation, check in audited if conversation == item.id]
        try:
            done: Done = await self.actors[index].process.remote(payload, mine, checks)
        except self._ray.exceptions.RayActorError as exc:
            self._dead.add(index)
            raise ItemLost(
                f"worker {index} died; {item.id} will run again on resume ({type(exc).__name__})"
            ) from exc
        return done

    def _next_alive(self) -> int:
        for _ in range(len(self.actors)):
            index = next(self._turn)
            if index not in self._dead:
                return index
        raise ItemLost("every Ray worker died; finish the run with simulator run --resume RUN")

    def call_stats(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        return self.calls, self.limits

    async def aclose(self) -> None:
        """Sum the live actors' call counts, close their connections, and end the actors."""
        from simulator.record.manifest import CallCounts

        total: dict[str, CallCounts] = {}
        for index, actor in enumerate(self.actors):
            if index in self._dead:
                continue
            try:
                calls, limits = await actor.stats.remote()
                await actor.close.remote()
            except self._ray.exceptions.RayActorError:
                continue
            for name, counts in calls.items():
                total[name] = total.get(name, CallCounts()) + CallCounts.model_validate(counts)
            self.limits.update(limits)
            self._ray.kill(actor)
        self.calls = {name: counts.model_dump() for name, counts in total.items()}
        if self._started_ray:
            self._ray.shutdown()


def _connect_error(address: str | None, exc: BaseException) -> UserError:
    """One line for a failed connection, with the fix for the usual causes."""
    where = address or os.environ.get("RAY_ADDRESS") or "a local Ray"
    said = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    if "ray[client]" in str(exc):
        return UserError(
            f"cannot connect to Ray at {where}: a ray:// address needs the Ray Client; install it with "
            'pip install -e ".[ray]" (which brings ray[client]) or pip install "ray[client]"'
        )
    return UserError(
        f"cannot connect to Ray at {where} ({type(exc).__name__}: {said}); check that the cluster is up and the "
        "address is right (ray status on the head node), and with an explicit --address or RAY_ADDRESS current "
        "Ray needs token authentication: export RAY_AUTH_MODE=token (and the cluster's RAY_AUTH_TOKEN)"
    )


def connect_ray(options: RayBackendOptions) -> bool:
    """Connect to (or start) Ray before anything is written: a run folder is made only once connected.
    Returns whether this process started Ray (and must shut it down)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    # Workers import bot factories (`examples.triage_bot:make_bot`) from where the user runs.
    path = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH", "")) if p)
    try:
        ray.init(
            address=options.address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},
        )
    except (Exception, SystemExit) as exc:  # Ray exits the process on some connection failures
        raise _connect_error(options.address, exc) from None
    return True


def start_ray_executor(
    parts: SessionParts, options: RayBackendOptions, width: int, started: bool = False
) -> RayExecutor:
    """Start the actors on the connected Ray (`connect_ray`); each runs up to width/N items at once."""
    ray = _ray()
    if not ray.is_initialized():
        started = connect_ray(options)
    workers = options.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    if workers < 1:
        raise UserError(f"--workers {workers}: give at least 1")
    suite = worker_share(parts.suite, workers)
    remote = ray.remote(num_cpus=0, max_concurrency=max(1, -(-width // workers)), max_restarts=0)(Worker)
    scenarios = list(parts.scenarios.values())
    actors = [
        remote.options(name=f"simulator-{parts.manifest.run_id}-{i}", scheduling_strategy="SPREAD").remote(
            suite, scenarios, parts.user_model, parts.manifest.models.bot, parts.manifest.run_id
        )
        for i in range(workers)
    ]
    return RayExecutor(ray, actors, started)
