"""Who plays each part of a run, built from the suite: the simulated user (offline, LLM, or a golden item's
scripted user) and the auditor of the simulated user's fidelity. The local runner and every Ray worker
build them the same way, from here."""

from __future__ import annotations

__all__ = [
    "check_offline_languages",
    "check_scripted",
    "make_auditor",
    "run_user_model",
    "suite_language_problems",
    "user_factory",
]

from typing import Any

from simulator.config.scenario import Scenario
from simulator.config.simulators import SIMULATOR_FACTOR, simulator_models
from simulator.config.suite import Suite
from simulator.config.vocabulary import Vocabulary
from simulator.engine.conversation import ConversationPlan
from simulator.errors import Problem, UserError
from simulator.judging.fidelity import FidelityAuditor
from simulator.plural import plural
from simulator.providers.hub import ModelHub, current_scope, resolve_user_model
from simulator.users.base import SimulatedUser
from simulator.users.prompt import render_user_prompt
from simulator.users.scripted import SCRIPTED, ScriptedUser


def user_factory(suite: Suite, hub: ModelHub, user_model: str) -> Any:
    """Who plays the user: the scripted user for golden items, else the simulated user the suite names
    (with `user.models`, the one of the scenario's `simulator` level: config/simulators.py)."""
    models = simulator_models(suite)
    if not models:
        return _one_user_factory(suite, hub, user_model)
    makers: dict[str, Any] = {level: _one_user_factory(suite, hub, m) for level, m in models.items()}
    first = next(iter(makers.values()))  # a golden item (not crossed) plays its script under any of them

    def make(plan: ConversationPlan, attempt: int) -> SimulatedUser:
        maker = makers.get(plan.scenario.factors.get(SIMULATOR_FACTOR, ""), first)
        user: SimulatedUser = maker(plan, attempt)
        return user

    return make


def _one_user_factory(suite: Suite, hub: ModelHub, user_model: str) -> Any:
    simulated = None if user_model == SCRIPTED else _simulated_user_factory(suite, hub, user_model)

    def make(plan: ConversationPlan, attempt: int) -> SimulatedUser:
        if plan.scenario.script is not None:
            return ScriptedUser(plan.scenario.script)
        assert simulated is not None  # run_suite refuses unscripted scenarios with the scripted user
        user: SimulatedUser = simulated(plan, attempt)
        return user

    return make


def run_user_model(suite: Suite) -> str:
    """The user model a run records in its manifest: the one model (`auto` resolved), or the several of
    `user.models` joined by commas (each conversation records its own)."""
    models = simulator_models(suite)
    return ", ".join(models.values()) if models else resolve_user_model(suite.user.model)


def check_scripted(user_model: str, scenarios: list[Scenario]) -> None:
    unscripted = [s.id for s in scenarios if s.script is None]
    if user_model == SCRIPTED and unscripted:
        raise UserError(
            f"user model '{SCRIPTED}' only plays golden items, and {plural(len(unscripted), 'scenario')} are not "
            f"golden items ({', '.join(unscripted[:3])}); set user.model to offline, auto or a model"
        )


def check_offline_languages(user_model: str, suite: Suite, scenarios: list[Scenario]) -> None:
    """The offline user speaks a scenario's `writes_in` and `switches_to` only with the suite vocabulary's
    phrases for them: refuse, naming each scenario file and field, rather than answer in English."""
    problems = _language_problems(user_model, suite, scenarios)
    if problems:
        how = " (user.model auto: no API key is set)" if suite.user.model == "auto" else ""
        raise UserError(f"the offline user{how} cannot speak these scenarios' languages", problems)


def suite_language_problems(suite: Suite) -> list[Problem]:
    """For `validate`: what `run` would refuse in the suite's languages, with the user model `run` would
    resolve (`auto` is the offline user without an API key). Scenario files that do not load are reported
    by the scenario check instead."""
    try:
        scenarios = suite.scenarios_to_run()
    except UserError:
        return []
    return _language_problems(resolve_user_model(suite.user.model), suite, scenarios)


def _language_problems(user_model: str, suite: Suite, scenarios: list[Scenario]) -> list[Problem]:
    from simulator.config.languages import offline_language_problems

    models = simulator_models(suite)
    if models:  # several simulated users: the scenarios the offline one plays
        offline = {level for level, model in models.items() if model == "offline"}
        scenarios = [s for s in scenarios if s.factors.get(SIMULATOR_FACTOR) in offline]
    elif user_model != "offline":
        return []
    if not scenarios:
        return []
    path = suite.user.vocabulary
    where = str(suite.resolve(path)) if path else None
    return offline_language_problems(scenarios, _suite_vocabulary(suite), where)


def _suite_vocabulary(suite: Suite) -> Vocabulary | None:
    """The offline user's domain words the suite names (`user.vocabulary`), or None."""
    from simulator.config.vocabulary import load_vocabulary

    path = suite.user.vocabulary
    return load_vocabulary(suite.resolve(path)) if path else None


def _simulated_user_factory(suite: Suite, hub: ModelHub, user_model: str) -> Any:
    if user_model == "offline":
        from simulator.config.styles import suite_styles
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


class _AuditorPerSimulator:
    """Several simulated users: each conversation is audited by the auditor of the user that played it."""

    def __init__(self, auditors: dict[str, FidelityAuditor]) -> None:
        self.auditors = auditors
        self.first = next(iter(auditors.values()))

    async def audit(self, record: Any, scenario: Scenario, known: Any) -> Any:
        level = scenario.factors.get(SIMULATOR_FACTOR)
        return await self.auditors.get(level or "", self.first).audit(record, scenario, known)


def is_real_user(user_model: str) -> bool:
    """Whether the conversations were held by real people: imported (`real`) or at the desk (`human:NAME`)."""
    return user_model == "real" or user_model.startswith("human:")


def make_auditor(suite: Suite, hub: ModelHub, user_model: str) -> FidelityAuditor | None:
    """The simulated-user auditor for a run (None when `user.fidelity.enabled` is off). The offline user
    needs no model; an LLM user is read by `user.fidelity.model`, else the judge model, else nothing.
    With several simulated users (`user.models`), each conversation's own user's auditor."""
    models = simulator_models(suite)
    if models and suite.user.fidelity.enabled:
        auditors = {level: _one_auditor(suite, hub, model) for level, model in models.items()}
        found = {level: a for level, a in auditors.items() if a is not None}
        return _AuditorPerSimulator(found) if found else None  # type: ignore[return-value]
    return _one_auditor(suite, hub, user_model)


def _one_auditor(suite: Suite, hub: ModelHub, user_model: str) -> FidelityAuditor | None:
    config = suite.user.fidelity
    if not config.enabled or user_model == SCRIPTED:  # a golden item's scripted user has no persona to audit
        return None
    if is_real_user(user_model):  # a real person (imported, or at the desk) is not a simulation to audit
        return None
    from simulator.config.styles import suite_styles

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
