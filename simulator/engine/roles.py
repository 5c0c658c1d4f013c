"""Who plays each part of a run, built from the suite: the simulated user (offline, LLM, or a golden item's
scripted user) and the auditor of the simulated user's fidelity. The local runner and every Ray worker
build them the same way, from here."""

from __future__ import annotations

__all__ = ["check_scripted", "make_auditor", "user_factory"]

from typing import Any

from simulator.engine.conversation import ConversationPlan
from simulator.errors import UserError
from simulator.judging.fidelity import FidelityAuditor
from simulator.providers.hub import ModelHub, current_scope
from simulator.spec.scenario import Scenario
from simulator.spec.suite import Suite
from simulator.spec.vocabulary import Vocabulary
from simulator.users.base import SimulatedUser
from simulator.users.prompt import render_user_prompt
from simulator.users.scripted import SCRIPTED, ScriptedUser


def user_factory(suite: Suite, hub: ModelHub, user_model: str) -> Any:
    """Who plays the user: the scripted user for golden items, else the simulated user the suite names."""
    simulated = None if user_model == SCRIPTED else _simulated_user_factory(suite, hub, user_model)

    def make(plan: ConversationPlan, attempt: int) -> SimulatedUser:
        if plan.scenario.script is not None:
            return ScriptedUser(plan.scenario.script)
        assert simulated is not None  # run_suite refuses unscripted scenarios with the scripted user
        user: SimulatedUser = simulated(plan, attempt)
        return user

    return make


def check_scripted(user_model: str, scenarios: list[Scenario]) -> None:
    unscripted = [s.id for s in scenarios if s.script is None]
    if user_model == SCRIPTED and unscripted:
        raise UserError(
            f"user model '{SCRIPTED}' only plays golden items, and {len(unscripted)} scenarios are not "
            f"golden items ({', '.join(unscripted[:3])}); set user.model to offline, auto or a model"
        )


def _suite_vocabulary(suite: Suite) -> Vocabulary | None:
    """The offline user's domain words the suite names (`user.vocabulary`), or None."""
    from simulator.spec.vocabulary import load_vocabulary

    path = suite.user.vocabulary
    return load_vocabulary(suite.resolve(path)) if path else None


def _simulated_user_factory(suite: Suite, hub: ModelHub, user_model: str) -> Any:
    if user_model == "offline":
        from simulator.spec.styles import suite_styles
        from simulator.users.offline import OfflineUser

        vocabulary = _suite_vocabulary(suite)
        styles = suite_styles(suite)

        def offline(plan: ConversationPlan, attempt: int) -> SimulatedUser:
            user = OfflineUser(
                plan.scenario, seed=suite.seed, repeat=plan.repeat, vocabulary=vocabulary, styles=styles
            )
            if plan.scenario.attack is None:
                return user
            from simulator.users.attacker import OfflineAttacker

            return OfflineAttacker(user, plan.scenario.attack)

        return offline
    from simulator.users.llm_user import LLMUser

    client, model = hub.client(user_model)

    def llm(plan: ConversationPlan, attempt: int) -> SimulatedUser:
        scope = current_scope()
        if scope is not None:
            scope.attempt = attempt  # a replay after a character break is a new sample, not a cache hit
        return LLMUser(
            client,
            model,
            render_user_prompt(plan.scenario),
            suite.user.temperature,
            suite.user.max_tokens,
            record_raw=suite.record_raw,
        )

    return llm


def is_real_user(user_model: str) -> bool:
    """Whether the conversations were held by real people: imported (`real`) or at the desk (`human:NAME`)."""
    return user_model == "real" or user_model.startswith("human:")


def make_auditor(suite: Suite, hub: ModelHub, user_model: str) -> FidelityAuditor | None:
    """The simulated-user auditor for a run (None when `user.fidelity.enabled` is off). The offline user
    needs no model; an LLM user is read by `user.fidelity.model`, else the judge model, else nothing."""
    config = suite.user.fidelity
    if not config.enabled or user_model == SCRIPTED:  # a golden item's scripted user has no persona to audit
        return None
    if is_real_user(user_model):  # a real person (imported, or at the desk) is not a simulation to audit
        return None
    from simulator.spec.styles import suite_styles

    domain: dict[str, Any] = {
        "outcome_key": suite.outcome.key if suite.outcome is not None else None,
        "vocabulary": _suite_vocabulary(suite),
        "styles": suite_styles(suite),
    }
    spec = None if user_model == "offline" else (config.model or suite.judges.model)
    if spec is None:
        return FidelityAuditor(**domain)
    client, bare = hub.for_role("judge").client(spec)
    return FidelityAuditor(
        client,
        spec,
        bare,
        **domain,
        temperature=suite.judges.temperature,
        max_tokens=config.max_tokens,
    )
