"""A red-team pack: attack strategies as data, crossed with clinical scenarios as variants.

A suite names a pack (`redteam: {pack: ../redteam/strategies.yaml}`); every scenario in scope (by tags)
is played once straight and once per strategy that applies to it, as the variant `base~attack=<id>`
(factors/variants machinery: the base id is kept, so reports group by base scenario and by strategy).
The variant carries its strategy (`Scenario.attack`), is tagged `redteam` and `redteam-<id>` (so the LLM
criteria a strategy names apply to it), and takes the strategy's expected-outcome overrides.
"""

from __future__ import annotations

__all__ = ["expand_attacks", "load_pack"]

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from simulator.config.attack import RedTeamConfig, Strategy
from simulator.config.bot_kinds import prompted
from simulator.config.scenario import Scenario
from simulator.config.variants import variant_id
from simulator.config.yamlfile import YAMLProblem, load_model_file, read_text_file
from simulator.errors import UserError
from simulator.models import StrictModel


class RedTeamPack(StrictModel):
    """`strategies:` a list of attack strategies (simulator/config/attack.py)."""

    strategies: list[Strategy] = Field(min_length=1)

    @field_validator("strategies")
    @classmethod
    def _unique(cls, strategies: list[Strategy]) -> list[Strategy]:
        ids = [s.id for s in strategies]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"strategy ids repeat: {', '.join(repeated)}")
        return strategies


def load_pack(path: Path) -> RedTeamPack:
    """Read a red-team pack; mistakes name file, line and field."""
    return load_model_file(
        path,
        RedTeamPack,
        title="invalid red-team pack",
        missing=f"{path}: no such red-team pack; check redteam.pack in the suite",
        shape="a red-team pack is a mapping: strategies: [{id:, title:, owasp:, attacker:, ladder:, ...}]",
    )


def _instructions(suite: Any, config: RedTeamConfig) -> str | None:
    """The bot's own instructions the leak check looks for: the named file, else the prompt file of a bot
    whose prompt is in the suite (a chat bot's)."""
    name = config.instructions_file
    bot = prompted(suite.bot) if name is None else None
    if bot is not None:
        name = bot.system_prompt_file
    if not name:
        return None
    path = suite.resolve(name)
    try:
        return read_text_file(path)
    except YAMLProblem as exc:
        raise UserError(f"{exc.problem} (the bot's instructions, for the leak check)") from None


def suite_pack(suite: Any) -> list[Strategy]:
    """The strategies a suite applies (its `redteam.strategies` subset, in pack order), or none."""
    config: RedTeamConfig | None = getattr(suite, "redteam", None)
    if config is None:
        return []
    pack = load_pack(suite.resolve(config.pack))
    known = {s.id for s in pack.strategies}
    unknown = [name for name in config.strategies if name not in known]
    if unknown:
        raise UserError(
            f"redteam.strategies names {', '.join(unknown)}, not in {config.pack} ({', '.join(sorted(known))})"
        )
    chosen = [s for s in pack.strategies if not config.strategies or s.id in config.strategies]
    applied: dict[str, Any] = {"instructions": _instructions(suite, config)}
    outcome = getattr(suite, "outcome", None)
    if outcome is not None:
        applied.update(outcome_key=outcome.key, levels=list(outcome.levels))
    return [s.model_copy(update=applied) for s in chosen]


def _attacked(base: Scenario, strategy: Strategy) -> Scenario:
    tags = [*base.tags] + [t for t in ("redteam", f"redteam-{strategy.id}") if t not in base.tags]
    factors = {**base.factors, "attack": strategy.id}
    variant = base.model_copy(
        update={
            "id": variant_id(base.base or base.id, factors),
            "persona": f"{base.persona} {strategy.attacker.strip()}",
            "tags": tags,
            "expected": {**base.expected, **strategy.expected},
            "base": base.base or base.id,
            "factors": factors,
            "attack": strategy,
        }
    )
    variant._source, variant._line = base._source, base._line
    return variant


def expand_attacks(scenarios: list[Scenario], suite: Any) -> list[Scenario]:
    """Each scenario in the pack's scope crossed with each strategy that applies to it (see module doc)."""
    strategies = suite_pack(suite)
    if not strategies:
        return scenarios
    config: RedTeamConfig = suite.redteam
    out: list[Scenario] = []
    for base in scenarios:
        in_scope = not config.tags or any(tag in base.tags for tag in config.tags)
        if not in_scope or base.attack is not None:
            out.append(base)
            continue
        attacks = [s for s in strategies if not s.applies_to or any(tag in base.tags for tag in s.applies_to)]
        if config.include_base or not attacks:
            out.append(base)
        out += [_attacked(base, s) for s in attacks]
    return out
