"""Bot kinds: a suite's `bot: {type: ...}` names a registered kind, and the core asks the kind (its config
class, capabilities and checks) instead of switching on the name. docs/adding-a-channel.md says how to add one.

A kind is registered once, in its own module: `register_bot_kind(BotKind(name, config, factory, ...))`. Its
config class (a `BotConfig`) is data only and lives in the config layer, so a suite validates without
importing any adapter; its factory is a `module:callable` name imported only when a run starts.
"""

from __future__ import annotations

__all__ = [
    "BOT_KINDS",
    "EDITABLE_PROMPT",
    "ENVIRONMENT",
    "IN_CODE",
    "LIMIT_FIELDS",
    "MODEL",
    "AnyBot",
    "BotConfig",
    "BotKind",
    "PreflightCheck",
    "PromptedBot",
    "bot_kind",
    "bot_kinds",
    "engine_model",
    "kinds_with",
    "prompted",
    "register_bot_kind",
    "turn_timeout",
    "validate_bot",
]

import functools
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, cast

from pydantic import Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from simulator.models import StrictModel
from simulator.registry import Registry

if TYPE_CHECKING:
    from pydantic.json_schema import JsonSchemaValue


# Capabilities: what the core may ask of a kind. A kind declares the ones it has.
# It can call the tools of the suite's `environment:` (a suite with an environment needs such a bot).
ENVIRONMENT = "environment"
# Its prompt is in the suite (`system_prompt` or `system_prompt_file`, and optionally a `decision_tool`):
# `propose` may write edits of it and `try` applies them (PromptedBot).
EDITABLE_PROMPT = "editable_prompt"
# Its `model` field is a `provider:model` name this engine calls: checked by preflight, counted among the
# providers used, compared with the judge's for self-preference, swapped by `simulator.run(bot="openai:...")`.
MODEL = "model"
# The bot is a Python object given in code (simulator.run(..., bot=...)): a suite alone cannot build it.
IN_CODE = "in_code"

# The limits every kind has (a resume may raise one and rerun the conversations it stopped).
LIMIT_FIELDS = frozenset(
    {"max_reply_bytes", "max_messages_per_turn", "max_messages_per_conversation", "max_tool_calls_per_turn"}
)


def turn_timeout(default: float = 30.0) -> Any:
    """The `timeout_s` field of a kind with a turn deadline: above 0, at most an hour (a typo such as
    300000 is an error naming the field, not a run that waits days)."""
    return Field(default=default, gt=0, le=3600)


# (field path below `bot`, a check that raises UserError or YAMLProblem): what `validate` and `run` try
# before anything runs (engine/preflight.py).
PreflightCheck = tuple[tuple[str | int, ...], Callable[[], object]]


class BotConfig(StrictModel):
    """The base of every bot kind's config: `type` names the kind. A kind's config adds its fields (secret-
    bearing ones declared, simulator/config/secrets.py) and overrides the methods below that apply."""

    type: str
    # The release of the bot under test as its makers name it; recorded in the manifest (bot_identity.py).
    version: str | None = None
    # One turn's limits, the same on every channel (bots/turn_limits.py, docs/bots.md#limits): the most a
    # turn may hold as JSON (after decompression), messages in a turn and in a conversation, tool calls in
    # a turn. A turn past one is the bot error `over_limit` naming the field. Each kind that has a deadline
    # of its own declares `timeout_s` (turn_timeout()).
    max_reply_bytes: int = Field(default=8_000_000, ge=1024, le=64_000_000)
    max_messages_per_turn: int = Field(default=200, ge=1, le=100_000)
    max_messages_per_conversation: int = Field(default=5_000, ge=1, le=1_000_000)
    max_tool_calls_per_turn: int = Field(default=100, ge=1, le=10_000)
    # Fields a resume may change: how patiently the bot is waited for, never what the run measures.
    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS

    def describe(self) -> str:
        """The bot in one line, as reports and the manifest name it (`http:https://...`)."""
        return self.type

    def preflight_checks(self, resolve: Callable[[str], Path]) -> Iterator[PreflightCheck]:
        """What `validate` can try now that `run` would otherwise meet later (an import, a URL, a file)."""
        return iter(())

    def declared_state_keys(self) -> set[str] | None:
        """The final-state keys this bot can set, where the suite says; None when only the bot's code knows."""
        return None

    def identity_parts(self, base_dir: Path) -> dict[str, str]:
        """What identifies the release under test beyond a declared `version` (how -> value): a source hash,
        a started command's hash, a git describe (config/bot_identity.py). By default: a kind with a `start:`
        service (a BotStart) is identified by what it starts."""
        start = getattr(self, "start", None)
        return start.identity_parts(base_dir) if start is not None else {}

    def declared_tools(self) -> set[str] | None:
        """The tools this bot can be seen calling, where the suite says (besides an environment's); None
        when only the bot's code knows (a python or HTTP bot may return any tool call)."""
        return None

    def turn_deadline_s(self) -> float | None:
        """How long one whole bot turn may take (bots/turn_limits.py): the kind's `timeout_s` when it has
        one; None when the kind bounds its turns otherwise (a chat bot's model calls: the provider's)."""
        timeout = getattr(self, "timeout_s", None)
        return float(timeout) if isinstance(timeout, int | float) else None

    def kind(self) -> BotKind:
        return bot_kind(self.type)

    def has(self, capability: str) -> bool:
        return capability in self.kind().capabilities


@dataclass(frozen=True)
class BotKind:
    """One kind of bot: its `type` name, its config class, its factory (`module:callable`, called with
    (config, suite, hub) to make the run's BotFactory), and the capabilities the core may rely on."""

    name: str
    config: type[BotConfig]
    factory: str
    capabilities: frozenset[str] = frozenset()

    def has(self, capability: str) -> bool:
        return capability in self.capabilities


BOT_KINDS: Registry[BotKind] = Registry(
    "bot type",
    builtins=(
        "simulator.config.bots",
        "simulator.config.bots.whatsapp",
        "simulator.config.bots.openai_endpoint",
        "simulator.config.bots.in_code",
        "simulator.voice.config",
    ),
    # A package that adds a channel names its module here (pyproject: [project.entry-points."simulator.bot_kinds"]).
    group="simulator.bot_kinds",
    by_name=True,  # a run looks up one type: the other kinds' modules stay unimported
)


def register_bot_kind(kind: BotKind) -> BotKind:
    """The one registration call of a bot kind (in the module that defines its config)."""
    default = kind.config.model_fields["type"].default
    if default != kind.name:
        raise ValueError(f"bot kind '{kind.name}': its config's `type` must default to '{kind.name}'")
    return BOT_KINDS.register(kind.name, kind, kind.config.__module__)


def bot_kind(name: str) -> BotKind:
    """The kind named `name`; a UserError with a did-you-mean and every bot type otherwise."""
    return BOT_KINDS.get(name)


def bot_kinds() -> list[BotKind]:
    return BOT_KINDS.kinds()


def kinds_with(capability: str) -> list[str]:
    """The kinds a suite file can name that have `capability`, for messages ("use a python, http or chat
    bot"); a kind given in code (IN_CODE) is not one to suggest."""
    return [kind.name for kind in bot_kinds() if kind.has(capability) and not kind.has(IN_CODE)]


class _Tool(Protocol):
    """A decision tool: its call's arguments are the final state; a change may edit its description."""

    description: str
    field: str


class PromptedBot(Protocol):
    """A bot whose kind has EDITABLE_PROMPT: its prompt as the suite gives it."""

    system_prompt: str | None
    system_prompt_file: str | None

    @property
    def decision_tool(self) -> _Tool | None: ...

    def describe(self) -> str: ...


def prompted(bot: BotConfig) -> PromptedBot | None:
    """`bot` as a bot with an editable prompt, or None when its kind has none."""
    return cast("PromptedBot", bot) if bot.has(EDITABLE_PROMPT) else None


class _Modelled(Protocol):
    model: str


def engine_model(bot: BotConfig) -> str | None:
    """The `provider:model` this engine calls to play the bot (kinds with MODEL), else None."""
    return cast("_Modelled", bot).model if bot.has(MODEL) else None


def _unknown(kind_name: object, value: Any) -> ValidationError:
    message = (
        BOT_KINDS.unknown(kind_name)
        if kind_name is not None
        else f"missing `type`; add one of the bot types: {', '.join(BOT_KINDS.names())}"
    )
    error = InitErrorDetails(
        type=PydanticCustomError("value_error", "{message}", {"message": message}), loc=("type",), input=value
    )
    return ValidationError.from_exception_data("bot", [error])


_adapters: dict[tuple[BotKind, ...], TypeAdapter[Any]] = {}


def _union(kinds: list[BotKind]) -> TypeAdapter[Any]:
    """One discriminated union of the registered kinds (rebuilt when one is added), so a kind's errors are
    located as pydantic locates them in a union: `<type>.<field>`, which says which kind's fields apply."""
    key = tuple(kinds)
    if key not in _adapters:
        members = functools.reduce(operator.or_, [kind.config for kind in kinds])
        union: Any = Annotated[members, Field(discriminator="type")]
        _adapters[key] = TypeAdapter(union)
    return _adapters[key]


def validate_bot(value: Any) -> BotConfig:
    """A bot config from a mapping (or a config as it is): the kind its `type` names validates it. A
    ValidationError locates each problem below `bot` (`type`, or `<type>.<field>`)."""
    if isinstance(value, BotConfig):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"a bot is a mapping with a `type` ({', '.join(BOT_KINDS.names())})")
    name = value.get("type")
    kind = BOT_KINDS.find(name) if isinstance(name, str) else None
    if kind is None:
        raise _unknown(name, value)
    # The named kind's union of one: its errors are located as in the union of every kind (`<type>.<field>`)
    # without building (and importing) the others.
    return cast(BotConfig, _union([kind]).validate_python(value))


class _ByKind:
    """The pydantic type of a suite's `bot:`: validated by the kind its `type` names (`validate_bot`), dumped
    as that kind's config, and described to editors as the union of every registered kind."""

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(validate_bot)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        kinds = {kind.name: kind.config.__pydantic_core_schema__ for kind in bot_kinds()}
        return handler(core_schema.tagged_union_schema(kinds, discriminator="type"))


# A field holding any registered kind's config: `bot: AnyBot`.
AnyBot = Annotated[BotConfig, _ByKind]
