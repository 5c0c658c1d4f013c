"""What a run will do, before it starts: the suite (from a file, or built in code), its bot (a config, or a
bot given in code), and the scenarios it runs (`Suite.scenarios_to_run`, persona-factor variants included).
The command line, the pytest plugin, the desk and `simulator.run` all plan a run here."""

from __future__ import annotations

__all__ = ["Plan", "cell_bots", "inline_scenarios", "load_suite", "prepare", "resolve_bot"]

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.errors import UserError, error_loc, field_path, option_forms, pattern_or_message

if TYPE_CHECKING:
    from simulator.bots import BotFactory
    from simulator.config.scenario import Scenario
    from simulator.config.suite import Suite


@dataclass
class Plan:
    """A suite ready to run: its scenarios (variants included) and, for a bot given in code, its factory."""

    suite: Suite
    scenarios: list[Scenario]
    bots: BotFactory | None = None


def load_suite(path: str | Path, **overrides: Any) -> Suite:
    """Read and validate a suite file; `overrides` replace top-level keys first (`runs=3`, `seed=1`)."""
    from simulator.config.suite import load_suite as load

    return load(Path(path), {k: v for k, v in overrides.items() if v is not None} or None)


def _suite(suite: Suite | str | Path | None, overrides: dict[str, Any]) -> Suite:
    """The suite to run, never the caller's own object (a run changes models, tags...)."""
    from simulator.config.bots.in_code import CallableBotConfig
    from simulator.config.suite import Suite, with_run_options

    given = {k: v for k, v in overrides.items() if v is not None}
    if isinstance(suite, str | Path):
        return load_suite(suite, **given)
    if suite is None:
        # Built in code: scenarios and bot come from the call. `type: callable` is replaced by resolve_bot.
        suite = Suite(bot=CallableBotConfig(name="(none given)"))
    if not isinstance(suite, Suite):
        raise UserError(f"suite must be a Suite, a suite file path or None, not {type(suite).__name__}")
    return with_run_options(suite, given)


def _is_model_name(text: str) -> bool:
    from simulator.config.providers import PROVIDERS

    provider, sep, model = text.partition(":")
    return bool(sep and model) and provider in PROVIDERS


def _refuse_unknown_provider(text: str) -> None:
    """`foo:gpt-4` is a model of an unknown provider, not `module:factory`, when `foo` is a plain name no
    module has: said as `user_model='foo:bar'` is (config.providers.split_model), not as a bad factory."""
    import importlib.util

    from simulator.config.providers import split_model

    provider, sep, _ = text.partition(":")
    if sep and provider.isidentifier() and importlib.util.find_spec(provider) is None:
        try:
            split_model(text)
        except UserError as exc:
            raise UserError(
                f"bot '{text}': {exc} (nor is '{provider}' a module, for module:factory)"
            ) from None


def resolve_bot(bot: Any, suite: Suite) -> tuple[Any, BotFactory | None]:
    """The bot config to record and, for a bot given in code, the factory that makes it. `bot` may be:
    None (the suite's own bot), a model name (`openai:gpt-4.1-mini`: the suite's chat bot with that model),
    `module:factory`, a bot config (mapping or model), or a bot object (see bots.python_bot.bot_from_object)."""
    from pydantic import ValidationError

    from simulator.bots.python_bot import bot_from_object
    from simulator.bots.turn_limits import TurnLimits
    from simulator.config.bot_kinds import IN_CODE, MODEL, BotConfig, validate_bot
    from simulator.config.bots.in_code import CallableBotConfig

    if bot is None:
        if suite.bot.has(IN_CODE):  # the suite was built in code and names no bot of its own
            raise UserError("no bot: pass bot= (a function, an object with send(text), or 'module:factory')")
        return suite.bot, None
    if isinstance(bot, str):
        if _is_model_name(bot):
            if not suite.bot.has(MODEL):
                raise UserError(
                    f"bot '{bot}' is a model; a model bot needs a system prompt: give the suite a chat bot "
                    "(bot: {type: chat, model: ..., system_prompt: ...}) and pass models to compare"
                )
            return suite.bot.model_copy(update={"model": bot}), None
        _refuse_unknown_provider(bot)
        bot = {"type": "python", "factory": bot}
    if isinstance(bot, dict):
        try:
            return validate_bot(bot), None
        except ValidationError as exc:
            raise UserError(
                f"bot {bot!r} is not a valid bot config: {pattern_or_message(exc.errors()[0])}"
            ) from None
    if isinstance(bot, BotConfig):
        return bot, None
    factory = bot_from_object(bot)
    config = CallableBotConfig(name=factory.spec, **_limits_written(suite.bot))
    factory.limits = TurnLimits.of(config)  # the deadline and caps the suite wrote hold for a bot in code too
    return config, factory


def _limits_written(bot: Any) -> dict[str, Any]:
    """The turn limits (bot.timeout_s, max_reply_bytes, ...) the suite's own bot sets, for the bot given in
    code that takes its place: they were dropped, and a bot in code always ran on the defaults."""
    from simulator.config.bots.in_code import CallableBotConfig

    kept = CallableBotConfig.operational & set(CallableBotConfig.model_fields)
    return {key: getattr(bot, key) for key in kept if key in bot.model_fields_set}


def inline_scenarios(scenarios: Sequence[Any]) -> list[Scenario]:
    """Scenarios given in code: Scenario models, mappings, or scenario files and folders."""
    from pydantic import ValidationError

    from simulator.config.loading import load_scenarios
    from simulator.config.scenario import Scenario

    out: list[Scenario] = []
    for index, item in enumerate(scenarios):
        if isinstance(item, Scenario):
            out.append(item)
        elif isinstance(item, dict):
            try:
                out.append(Scenario.model_validate(item))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = field_path(("scenarios", index, *error_loc(first)), python=True)
                raise UserError(f"{where}: {pattern_or_message(first)}") from None
        elif isinstance(item, str | Path):
            out += load_scenarios([Path(item)])
        else:
            raise UserError(
                f"{field_path(('scenarios', index), python=True)}: a Scenario, a mapping or a file path, not {type(item).__name__}"
            )
    if not out:
        raise UserError("scenarios=[] holds no scenario; give at least one")
    seen: dict[str, int] = {}
    for index, scenario in enumerate(out):
        if scenario.id in seen:  # as `validate` refuses it in files: two results would share one id
            raise UserError(
                f"scenarios[{index}]: id '{scenario.id}' is already scenarios[{seen[scenario.id]}]'s; "
                "give each scenario its own id"
            )
        seen[scenario.id] = index
    return out


def prepare(
    suite: Suite | str | Path | None = None,
    *,
    bot: Any = None,
    scenarios: Sequence[Any] | None = None,
    scenario_ids: Collection[str] | None = None,
    tags: list[str] | None = None,
    user_model: str | None = None,
    judge_model: str | None = None,
    include_drafts: bool = False,
    **overrides: Any,
) -> Plan:
    """Plan a run: the suite with the call's choices applied (`overrides`: runs, concurrency, seed), the bot,
    and the scenarios to run; `scenario_ids` keeps only those (variants by their ids)."""
    chosen = _suite(suite, overrides)
    if scenarios is not None:
        chosen._inline = inline_scenarios(scenarios)
    elif suite is None:
        raise UserError("no scenarios: pass a suite file, or scenarios=[...] (Scenario models or mappings)")
    config, bots = resolve_bot(bot, chosen)
    chosen.bot = config
    from simulator.config.suite import given_by_option

    for key, value in (("user_model", user_model), ("judge_model", judge_model)):
        if value is not None and not value.strip():  # an empty flag was silently the suite's own model
            raise UserError(f"the model given ({option_forms(key)}) is empty; name a model, or leave it out")
    if user_model:
        chosen.user.model = user_model
        chosen.user.models = None  # the command line's one simulated user replaces the suite's several
        given_by_option(chosen, "user.model", "user_model")
    if judge_model:
        chosen.judges.model = judge_model
        given_by_option(chosen, "judges.model", "judge_model")
    if include_drafts:
        chosen.scenarios.include_drafts = True
    if tags is not None:
        chosen.scenarios.tags = list(tags)
    found = chosen.scenarios_to_run(ids=scenario_ids)
    unknown = sorted(set(scenario_ids or ()) - {s.id for s in found})
    if unknown:
        raise UserError(f"no scenario {', '.join(map(repr, unknown))} in this suite (variants included)")
    return Plan(chosen, found, bots)


def cell_bots(bots: Mapping[str, Any] | None, folder: Path) -> dict[str, BotFactory]:
    """The bots given in code of the matrix in `folder` being resumed, by bot variant id; a key that names
    none of its bots is refused (it was ignored, and the cell it was meant for had no bot)."""
    if not bots:
        return {}
    if not isinstance(bots, Mapping):
        raise UserError("to resume a matrix, pass bot= as a mapping of bot variant id to the bot")
    from simulator.bots.python_bot import bot_from_object
    from simulator.record.index import read_index

    known = sorted({cell.bot_variant for cell in read_index(folder).cells})
    for key in bots:
        if key not in known:
            raise UserError(
                f"simulator.resume: bot[{key!r}] names no bot of the matrix {folder}; its bots are: "
                f"{', '.join(map(repr, known))}"
            )
    return {key: bot_from_object(bot) for key, bot in bots.items()}
