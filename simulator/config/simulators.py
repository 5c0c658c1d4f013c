"""Several simulated users (`user.models: [...]`): every scenario x repeat runs under each one.

The simulated user becomes one more factor of the scenario, `simulator`, whose levels are the models the
suite names: a variant `chest-pain-vague-01~simulator=offline` is an ordinary scenario with a stable id,
so resume, shards, merge, the held-out seal (which hashes the base id) and the factor tables work on it
unchanged, and the conversation record's `user_model` says who played the user. An entry is a model
(`offline`, `anthropic:claude-haiku-4-5`) or a one-key mapping `{haiku: anthropic:claude-haiku-4-5}` that
gives the level a short name. Golden items keep their scripted user and are not crossed.

Why: simulated patients do not predict real patients' failures well, and a failure seen under one
simulator only is often the simulator's doing; the report gives every key rate per simulator and the
range across them (analysis/simulators.py, docs/simulators.md).
"""

from __future__ import annotations

__all__ = [
    "SIMULATOR_FACTOR",
    "expand_simulators",
    "parse_user_models",
    "simulator_level",
    "simulator_models",
    "user_model_for",
    "without_simulator",
]

import re
from typing import Any

from simulator.config.scenario import Scenario
from simulator.errors import field_path

SIMULATOR_FACTOR = "simulator"
_LEVEL = re.compile(r"^[^\s#~=]+$")


def parse_user_models(entries: list[Any]) -> dict[str, str]:
    """{level name: model} in the order written; raises ValueError naming the bad entry (the suite's
    validator turns it into a one-line error with the field)."""
    if not entries:
        raise ValueError("user.models is empty: name at least two simulated users, or use user.model")
    out: dict[str, str] = {}
    for position, entry in enumerate(entries):
        where = field_path(("user", "models", position))
        if isinstance(entry, str):
            name, model = entry.strip(), entry.strip()
        elif isinstance(entry, dict) and len(entry) == 1 and isinstance(next(iter(entry.values())), str):
            name, model = (str(part).strip() for part in next(iter(entry.items())))
        else:
            raise ValueError(
                f"{where}: write a model (`offline`, `anthropic:claude-haiku-4-5`) or {{name: model}}"
            )
        if not name or not model:
            raise ValueError(f"{where} is empty")
        if not _LEVEL.match(name):
            raise ValueError(
                f"{where}: '{name}' cannot name a simulator (no spaces, '#', '~' or '='); "
                "write {short-name: model}"
            )
        if model == "auto":
            raise ValueError(f"{where}: 'auto' depends on the keys set; name the model (or `offline`)")
        if name in out or model in out.values():
            raise ValueError(f"user.models lists '{name if name in out else model}' twice")
        out[name] = model
    if len(out) < 2:
        raise ValueError("user.models names one simulated user: use user.model, or name two or more")
    return out


def simulator_models(suite: Any) -> dict[str, str]:
    """The suite's simulators {level: model}, or {} when it names one user model."""
    entries = getattr(getattr(suite, "user", None), "models", None)
    return parse_user_models(entries) if entries else {}


def simulator_level(scenario_id: str) -> str | None:
    """The `simulator` level of a variant id (`...~simulator=offline` -> "offline"), or None."""
    marker = f"~{SIMULATOR_FACTOR}="
    if marker not in scenario_id:
        return None
    return scenario_id.split(marker, 1)[1].split("~", 1)[0]


def without_simulator(scenario_id: str) -> str:
    """The id with its simulator level taken out: the same scenario under every simulator (the pairing)."""
    level = simulator_level(scenario_id)
    return scenario_id if level is None else scenario_id.replace(f"~{SIMULATOR_FACTOR}={level}", "", 1)


def _crossed(scenario: Scenario, level: str) -> Scenario:
    from simulator.config.variants import variant_id

    base = scenario.base or scenario.id
    factors = {**scenario.factors, SIMULATOR_FACTOR: level}
    variant = scenario.model_copy(update={"id": variant_id(base, factors), "base": base, "factors": factors})
    variant._source, variant._line = scenario._source, scenario._line
    return variant


def expand_simulators(scenarios: list[Scenario], suite: Any) -> list[Scenario]:
    """Each scenario under each simulator the suite names (golden items, which play a script, once)."""
    models = simulator_models(suite)
    if not models:
        return scenarios
    out: list[Scenario] = []
    for scenario in scenarios:
        out += [scenario] if scenario.script is not None else [_crossed(scenario, lv) for lv in models]
    return out


def user_model_for(scenario: Scenario, models: dict[str, str], default: str) -> str:
    """The model that plays the user in this scenario: its simulator level's, else `default`."""
    level = scenario.factors.get(SIMULATOR_FACTOR)
    return models.get(level, default) if level is not None else default
