"""The built-in bot kinds that need no channel of their own (python, http, chat) and the pieces channels
share (a started service, a URL check). Config only: the adapters are in bots/."""

from __future__ import annotations

__all__ = [
    "BotStart",
    "ChatBotConfig",
    "HttpBotConfig",
    "PythonBotConfig",
    "check_url",
    "factory_needs",
    "load_factory",
]

import contextlib
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from simulator.config.bot_identity import SOURCE, module_source_hash, started_parts
from simulator.config.bot_kinds import (
    EDITABLE_PROMPT,
    ENVIRONMENT,
    LIMIT_FIELDS,
    MODEL,
    BotConfig,
    BotKind,
    PreflightCheck,
    register_bot_kind,
    turn_timeout,
)
from simulator.config.named_files import NamesFile, NamesFolder
from simulator.config.providers import MaxTokens, Temperature
from simulator.config.secrets import SecretTemplate, SecretURL, SecretVariables
from simulator.config.wire import HTTP_HEADERS, check_url
from simulator.config.yamlfile import YAMLProblem, read_text_file
from simulator.errors import FieldProblem, UserError
from simulator.importing import import_callable
from simulator.models import StrictModel, empty_dict, empty_list
from simulator.plural import noun


def load_factory(spec: str) -> Callable[[], Any]:
    """Import `module:attr` (attr may be dotted); a mistake is a UserError that names the spec, and so is a
    factory that cannot be called without arguments (`factory_needs`), refused here, before the run, not
    in every conversation."""
    try:
        factory = import_callable(spec, "module:factory", "examples.triage_bot:make_bot")
    except ValueError as exc:
        raise UserError(f"bot factory: {exc}") from None
    needs = factory_needs(factory)
    if needs is not None:
        example = (
            f" (def make_bot(): return {spec.split(':', 1)[1]}(...))" if inspect.isclass(factory) else ""
        )
        raise UserError(
            f"bot factory '{spec}' {needs}: give every parameter a default, or point the factory at a "
            f"function of no arguments that makes the bot{example}"
        )
    return factory


def factory_needs(factory: Callable[..., Any]) -> str | None:
    """Why `factory` cannot make a bot (a class whose constructor, or a function that, needs arguments:
    the engine calls it with none, once per conversation, giving only `env` by name), or None when it
    can (or its signature cannot be read)."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    given = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    needed = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind not in given
        and not (p.name == "env" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
    ]
    if not needed:
        return None
    what = "is a class whose constructor needs" if inspect.isclass(factory) else "needs"
    return (
        f"{what} the {noun(len(needed), 'argument')} {', '.join(needed)}, but a new bot is made "
        "for every conversation with none"
    )


class PythonBotConfig(BotConfig):
    """A bot in Python: `module:factory` returns a fresh object with `send(text)` per conversation."""

    type: Literal["python"] = "python"
    factory: str = Field(pattern=r"^[\w.]+:[\w.]+$")
    # The deadline of one call of send() (and of final_state()), as an HTTP bot's whole answer's.
    timeout_s: float = turn_timeout()

    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS | {"timeout_s"}

    def describe(self) -> str:
        return f"python:{self.factory}"

    def preflight_checks(self, resolve: Callable[[str], Path]) -> Iterator[PreflightCheck]:
        yield ("factory",), lambda: load_factory(self.factory)

    def identity_parts(self, base_dir: Path) -> dict[str, str]:
        # Named by the module, never its path: one bot from two working folders or checkouts is one identity.
        # The factory too: two factories of one module (make_bot, make_fixed_bot) are two bots.
        module = self.factory.split(":", 1)[0]
        found = module_source_hash(module)
        return ({} if found is None else {f"{SOURCE}{module}": found}) | {"factory": self.factory}


class ReadyCheck(StrictModel):
    """When a started bot is ready: an HTTP `url` answers (any status below 500), or a TCP `port` accepts."""

    url: Annotated[str | None, SecretURL] = Field(default=None, pattern=r"^https?://")
    port: int | str | None = None  # a number, or "{port}"
    timeout_s: float = Field(default=30.0, gt=0)


class BotStart(StrictModel):
    """A service bot the engine starts for the run (docs/bots.md): `command` (a list, no shell) with
    `{port}` (a free loopback port), `{python}` (this interpreter) and, for whatsapp, `{api_url}` (the local
    Graph API) filled in; `env` values may use ${VAR} and the same placeholders. Its output goes to the run
    folder's `bot.log`; it gets SIGTERM, then SIGKILL after `stop_timeout_s`, when the run ends."""

    command: Annotated[list[str], NamesFile(within="cwd")] = Field(min_length=1)
    ready: ReadyCheck | None = None  # default: the bot's own URL's port accepts connections
    env: Annotated[dict[str, str], SecretVariables] = Field(default_factory=empty_dict)
    cwd: Annotated[str | None, NamesFolder()] = None  # relative to the suite file; default the suite's folder
    stop_timeout_s: float = Field(default=5.0, gt=0)

    def identity_parts(self, base_dir: Path) -> dict[str, str]:
        """The started bot's command hash, the files it names, its folder's git describe."""
        return started_parts(self.command, base_dir / self.cwd if self.cwd else base_dir)


class HttpBotConfig(BotConfig):
    """A bot behind HTTP; header values may name environment variables as ${VAR}, expanded at run time."""

    type: Literal["http"] = "http"
    url: Annotated[str, SecretURL] = Field(pattern=r"^https?://")
    headers: Annotated[dict[str, str], SecretTemplate, HTTP_HEADERS] = Field(default_factory=empty_dict)
    # The whole turn's deadline (not per read); the most a reply may hold is `max_reply_bytes`, decompressed.
    timeout_s: float = turn_timeout()
    start: BotStart | None = None
    # A URL the bot answers with its release (JSON {"version": ...} or text), asked once it is ready and
    # recorded in the manifest's bot_identity; may use {port} like `url`.
    version_url: Annotated[str | None, SecretURL] = Field(default=None, pattern=r"^https?://")
    # In a suite with an environment, serve its tools over MCP too (streamable HTTP, one endpoint per
    # conversation); each request then carries `env_mcp_url` (bots/env_mcp.py, docs/environment.md).
    environment_mcp: bool = False

    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS | {"timeout_s"}

    def describe(self) -> str:
        return f"http:{self.url}"


class DecisionTool(StrictModel):
    """A tool the chat bot calls to record its decision; the call's arguments become the final state."""

    name: str = "record_decision"
    description: str = "Record your final decision once you have enough information."
    field: str = "decision"
    values: list[str] = Field(default_factory=empty_list)


class ChatBotConfig(BotConfig):
    """A bot that needs no code: a model plus a system prompt, for model and prompt comparisons."""

    type: Literal["chat"] = "chat"
    model: str = Field(pattern=r"^[\w.-]+:.+$")
    system_prompt: str | None = None
    system_prompt_file: Annotated[str | None, NamesFile()] = None
    temperature: Temperature = None
    max_tokens: MaxTokens = 400
    decision_tool: DecisionTool | None = None
    # Stream replies, so reports show the bot's time to first token.
    stream: bool = False

    @model_validator(mode="after")
    def _one_prompt(self) -> ChatBotConfig:
        if not self.system_prompt and not self.system_prompt_file:
            raise FieldProblem("a chat bot needs system_prompt or system_prompt_file")
        return self

    def describe(self) -> str:
        return f"chat:{self.model}"

    def preflight_checks(self, resolve: Callable[[str], Path]) -> Iterator[PreflightCheck]:
        if self.system_prompt_file:
            path = resolve(self.system_prompt_file)
            yield ("system_prompt_file",), lambda: read_text_file(path)

    def declared_state_keys(self) -> set[str] | None:
        return {self.decision_tool.field} if self.decision_tool is not None else set()

    def identity_parts(self, base_dir: Path) -> dict[str, str]:
        import hashlib

        prompt = self.system_prompt or ""
        if self.system_prompt_file and (base_dir / self.system_prompt_file).is_file():
            with contextlib.suppress(YAMLProblem):  # an unreadable file is reported where it is read
                prompt = read_text_file(base_dir / self.system_prompt_file)
        return {
            "model": self.model,
            "system prompt sha256": "sha256:" + hashlib.sha256(prompt.encode()).hexdigest(),
        }

    def declared_tools(self) -> set[str] | None:
        return {self.decision_tool.name} if self.decision_tool is not None else set()


register_bot_kind(
    BotKind(
        "python",
        PythonBotConfig,
        "simulator.bots.python_bot:python_bot_factory",
        frozenset({ENVIRONMENT}),
    )
)
register_bot_kind(
    BotKind(
        "http",
        HttpBotConfig,
        "simulator.bots.http_bot:http_bot_factory",
        frozenset({ENVIRONMENT}),
    )
)
register_bot_kind(
    BotKind(
        "chat",
        ChatBotConfig,
        "simulator.bots.chat_bot:chat_bot_factory",
        frozenset({ENVIRONMENT, EDITABLE_PROMPT, MODEL}),
    )
)
