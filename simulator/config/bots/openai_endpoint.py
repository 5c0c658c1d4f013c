"""The `openai_endpoint` bot kind's config: a bot that *is* a model server speaking the OpenAI chat API.
The adapter is simulator/bots/openai_endpoint.py."""

from __future__ import annotations

__all__ = ["OpenAIEndpointBotConfig"]

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from simulator.config.bot_kinds import (
    ENVIRONMENT,
    LIMIT_FIELDS,
    BotConfig,
    BotKind,
    register_bot_kind,
    turn_timeout,
)
from simulator.config.bots import BotStart
from simulator.config.providers import MaxTokens, Temperature
from simulator.config.secrets import SecretEnv, SecretURL
from simulator.models import empty_dict, empty_list


class OpenAIEndpointBotConfig(BotConfig):
    """A bot that *is* a model server speaking the OpenAI chat API (a fine-tuned or proxied model with its
    own tools); the tool calls it returns are recorded as tool_call parts (docs/bots.md)."""

    type: Literal["openai_endpoint"] = "openai_endpoint"
    base_url: Annotated[str, SecretURL] = Field(pattern=r"^https?://")
    model: str = Field(min_length=1)
    api_key_env: Annotated[str | None, SecretEnv] = None  # default: no key (a local server)
    system_prompt: str | None = None
    # Tools offered to the server, OpenAI function shape: {name, description, parameters}.
    tools: list[dict[str, Any]] = Field(default_factory=empty_list)
    temperature: Temperature = None
    max_tokens: MaxTokens = 400
    # Each call of the model server's deadline; a turn (up to max_tool_rounds + 1 calls) gets that many.
    timeout_s: float = turn_timeout(60.0)
    # Canned results by tool name, sent back when the server asks for them; recorded with the call. In a
    # suite with an `environment:`, its tools answer instead (docs/environment.md).
    tool_results: dict[str, Any] = Field(default_factory=empty_dict)
    max_tool_rounds: int = Field(default=4, ge=0, le=20)
    # The tool whose arguments are the bot's final state (its triage decision).
    state_tool: str | None = None
    start: BotStart | None = None

    operational: ClassVar[frozenset[str]] = LIMIT_FIELDS | {"timeout_s"}

    def turn_deadline_s(self) -> float | None:
        return self.timeout_s * (self.max_tool_rounds + 1)

    def describe(self) -> str:
        return f"openai_endpoint:{self.model}@{self.base_url}"

    def declared_tools(self) -> set[str] | None:
        return {str(tool.get("name") or tool.get("function", {}).get("name")) for tool in self.tools}


# ENVIRONMENT: in a suite with one, the server's tool calls run against the conversation's world (its own
# `tools` keep their canned results only without one). Its model is the server's name for it, not a
# provider:model this engine calls (no MODEL).
register_bot_kind(
    BotKind(
        "openai_endpoint",
        OpenAIEndpointBotConfig,
        "simulator.bots.openai_endpoint:openai_endpoint_bot_factory",
        frozenset({ENVIRONMENT}),
    )
)
