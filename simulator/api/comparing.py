"""`simulator.compare`: several bots or models on the same scenarios, repeats and seed, as one matrix run
(engine/matrix.py) ranked by the leaderboard (analysis/leaderboard.py), in a few lines of Python."""

from __future__ import annotations

__all__ = ["acompare", "compare", "execute_matrix", "variant_id"]

import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.api.door import BOTS, NAMES, checked, fresh_options, of
from simulator.api.plan import Plan, prepare, resolve_bot
from simulator.api.result import Comparison, Result
from simulator.api.running import _options, in_python_words, run_sync
from simulator.errors import UserError, field_path, pattern_or_message

if TYPE_CHECKING:
    from simulator.bots import BotFactory
    from simulator.config.suite import Suite
    from simulator.engine.runner import RunOptions


def variant_id(name: str) -> str:
    """A matrix variant id (the cell's folder name) from a model or bot name: `openai:gpt-4.1` ->
    `openai-gpt-4.1`."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "bot"
    return cleaned[:60] if cleaned[0].isalnum() else f"b{cleaned}"[:60]


def _named(bots: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    """Variant id -> bot: a mapping's keys, else a name from each bot (model, factory or object name)."""
    if isinstance(bots, Mapping):
        return {str(key): value for key, value in bots.items()}
    from simulator.bots.python_bot import object_name

    out: dict[str, Any] = {}
    for bot in bots:
        base = variant_id(bot if isinstance(bot, str) else object_name(bot).rsplit(".", 1)[-1])
        name, number = base, 2
        while name in out:
            name, number = f"{base}-{number}", number + 1
        out[name] = bot
    return out


def _cells(models: Sequence[str] | None, bots: Mapping[str, Any] | Sequence[Any] | None) -> dict[str, Any]:
    """Cell name -> bot: the models', then the bots'; a name both give is refused (one replaced the other)."""
    named = _named(_model_names(models)) if models else {}
    for key, bot in (_named(bots) if bots else {}).items():
        if key in named:
            raise UserError(
                f"simulator.compare: bots and models both name a cell '{key}'; give the bot another name "
                f"(bots={{'{key}-bot': ...}})"
            )
        named[key] = bot
    return named


def _model_names(models: Sequence[str]) -> list[str]:
    """`models=` holds model names (provider:model), for the suite's chat bot; never a factory."""
    from simulator.config.providers import split_model

    for index, model in enumerate(models):
        try:
            split_model(model)
        except UserError as exc:
            raise UserError(
                f"simulator.compare: {field_path(('models', index), python=True)}: {exc}"
            ) from None
    return list(models)


def _variants(suite: Suite, named: dict[str, Any]) -> tuple[list[Any], dict[str, BotFactory]]:
    from simulator.config.matrix import BotVariant

    variants, factories = [], {}
    for key, bot in named.items():
        config, factory = resolve_bot(bot, suite)
        variants.append(BotVariant(id=key, bot=config.model_dump()))
        if factory is not None:
            factories[key] = factory
    return variants, factories


@checked(
    "compare",
    bots=BOTS,
    models=NAMES,
    baseline=of(str, "the name of one of the bots"),
    options=fresh_options(resumes=False),
)
async def acompare(
    suite: Suite | str | Path | None = None,
    *,
    bots: Mapping[str, Any] | Sequence[Any] | None = None,
    models: Sequence[str] | None = None,
    baseline: str | None = None,
    scenarios: Sequence[Any] | None = None,
    scenario_ids: Collection[str] | None = None,
    tags: list[str] | None = None,
    user_model: str | None = None,
    judge_model: str | None = None,
    runs: int | None = None,
    concurrency: int | None = None,
    seed: int | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    options: RunOptions | None = None,
) -> Comparison:
    """Run several bots on the same scenarios in one session and rank them.

    `bots`: a list of bots (anything `simulator.run` takes as bot=), or a mapping of name to bot; `models`:
    model names for the suite's chat bot (`openai:gpt-4.1-mini`, ...). Neither: the suite's own `matrix:`.
    `baseline`: the cell the others are compared with (default the first). The other arguments are
    `simulator.run`'s. Cells whose error budget stopped them are listed in `Comparison.aborted`."""
    from pydantic import ValidationError

    from simulator.config.matrix import MatrixConfig, expand_matrix

    if suite is None:
        raise UserError("compare needs a suite (a file or a Suite) whose scenarios the bots share")
    plan = prepare(
        suite,
        scenarios=scenarios,
        scenario_ids=scenario_ids,
        tags=tags,
        user_model=user_model,
        judge_model=judge_model,
        runs=runs,
        concurrency=concurrency,
        seed=seed,
    )
    chosen = plan.suite
    named = _cells(models, bots)
    factories: dict[str, BotFactory] = {}
    if not named and chosen.matrix is None:
        raise UserError("nothing to compare: pass bots=[...] or models=[...], or a suite with a matrix:")
    matrix: dict[str, Any] = chosen.matrix.model_dump() if chosen.matrix is not None else {"users": []}
    if named:
        variants, factories = _variants(chosen, named)
        matrix["bots"] = [v.model_dump() for v in variants]
        matrix["baseline"] = None
    if baseline is not None:
        matrix["baseline"] = baseline
    try:
        chosen.matrix = MatrixConfig.model_validate(matrix)
    except ValidationError as exc:
        raise UserError(f"compare: {pattern_or_message(exc.errors()[0])}") from None
    expand_matrix(chosen)  # every cell must be a valid suite before anything runs
    with in_python_words():
        return await execute_matrix(plan, _options(options, out, progress), factories)


async def execute_matrix(
    plan: Plan, options: RunOptions, bots: Mapping[str, BotFactory] | None = None
) -> Comparison:
    """Run every cell of a planned suite's `matrix:` in one session; `bots`: bots given in code, by bot
    variant id."""
    from simulator.config.suite import check_environment
    from simulator.engine.matrix import run_matrix
    from simulator.engine.preflight import preflight

    if plan.suite.matrix is None:
        raise UserError("this suite has no matrix: simulator.run(suite) runs it")
    check_environment(plan.suite)
    preflight(plan.suite)  # every cell, as `validate` checks them
    done = await run_matrix(plan.suite, plan.scenarios, options, bots)
    results = {cell: Result(Path(r.folder), r) for cell, r in done.results.items()}
    return Comparison(done.path, results)


def compare(*suite: Suite | str | Path | None, **choices: Any) -> Comparison:
    """`acompare` from sync code (a script or a Jupyter cell); the same arguments, checked at its door."""
    return run_sync(acompare(*suite, **choices))
