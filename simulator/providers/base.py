"""The provider contract: one async method that turns a provider-neutral request into a response."""

from __future__ import annotations

__all__ = [
    "ChatMessage",
    "ModelRequest",
    "ModelResponse",
    "Provider",
    "ProviderError",
    "ToolCall",
    "ToolSpec",
]

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_serializer

from simulator.jsonbounds import DECODER, JSONRefused, check_depth, loads_bounded
from simulator.models import StrictModel, empty_dict, empty_list
from simulator.record.transcript import Usage

ErrorKind = Literal["rate_limit", "transient", "permanent"]


class ChatMessage(StrictModel):
    """A message as a model sees it; `assistant` is the model's own side.

    In a tool loop an `assistant` message may carry the `tool_calls` the model made, and each result goes
    back as a `tool` message naming the call it answers (`tool_call_id`; `is_error` when it failed). Each
    provider writes these in its own wire format. The tool fields are left out of a dump when unused, so a
    text conversation's cache keys are what they always were."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False

    @model_serializer(mode="wrap")
    def _without_unused_tool_fields(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key, unused in (("tool_calls", ()), ("tool_call_id", None), ("is_error", False)):
                if key in data and (data[key] == unused or data[key] == []):
                    del data[key]
        return data


class ToolSpec(StrictModel):
    """A tool the model may call, described by a JSON schema for its arguments."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]


def json_object_in(text: str) -> dict[str, Any] | None:
    """The JSON object in a model's reply: the whole text, else the first object inside it (models without
    strict output wrap one in prose or a code fence). None when there is none (e.g. cut off by max_tokens).
    The one place every provider and the judge read a JSON answer from text."""
    try:
        value = loads_bounded(text, "the reply")
    except JSONRefused:
        value = None
    if isinstance(value, dict):
        return value
    for start in (index for index, char in enumerate(text) if char == "{"):
        try:
            value, _ = DECODER.raw_decode(text, start)
            check_depth(value, "the reply")
        except (ValueError, RecursionError):  # not JSON, too deep, NaN, huge numbers: look further
            continue
        if isinstance(value, dict):
            return value
    return None


class ToolCall(StrictModel):
    """A tool call the model made; `id` is the provider's, which a tool result must name."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any]
    id: str | None = None

    @classmethod
    def from_json(cls, name: str, text: str | None, id: str | None = None) -> ToolCall:
        """A call whose arguments arrived as JSON text; text that is not a JSON object is kept, not lost."""
        try:
            value = loads_bounded(text or "{}", "the arguments")
        except JSONRefused:
            value = None
        return cls(name=name, arguments=value if isinstance(value, dict) else {UNPARSED: text}, id=id)

    @property
    def unparsed(self) -> str | None:
        """The arguments' text when it was not JSON text of an object (kept as `{UNPARSED: text}`, which a
        cached response keeps too); None for a call whose arguments were read."""
        if set(self.arguments) == {UNPARSED}:
            return str(self.arguments[UNPARSED])
        return None


UNPARSED = "_unparsed"  # the one key of a call's arguments that arrived as text that is not a JSON object


ChatMessage.model_rebuild()


class ModelRequest(StrictModel):
    """Everything that changes a model's output, and nothing else (it is also the cache key's source)."""

    model_config = ConfigDict(frozen=True)

    model: str
    system: str | None = None
    messages: list[ChatMessage]
    max_tokens: int = 1024
    temperature: float | None = None
    output_schema: dict[str, Any] | None = None
    schema_name: str = "output"
    tools: list[ToolSpec] = Field(default_factory=empty_list)
    # Number of leading messages that are identical across a batch of calls (judges of one
    # conversation): providers with explicit prompt caching mark the prefix cacheable.
    cacheable_prefix_messages: int = 0
    # Stream the reply to measure time to first token (a bot's latency as a person feels it).
    stream: bool = False


class ModelResponse(StrictModel):
    """Text, the parsed object when a schema was asked for, tool calls, usage, latency, raw exchange."""

    text: str
    parsed: dict[str, Any] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=empty_list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    time_to_first_token_s: float | None = None  # set when the request was streamed
    model: str = ""
    raw: dict[str, Any] = Field(default_factory=empty_dict)
    cached: bool = False
    # What the provider's headers said is left of its rate-limit budget (a `RateLimits`); for the pacer,
    # never stored.
    rate_limits: Any = Field(default=None, exclude=True)


class ProviderError(Exception):
    """A failed call, classified so one retry policy can decide: retry a rate limit or transient error,
    never a permanent one (bad key, bad request), whose message says what to fix."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retry_after: float | None = None,
        status: int | None = None,
        rate_limits: Any = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.retry_after = retry_after
        self.status = status
        self.rate_limits = rate_limits  # a `RateLimits` from the error's headers, for the pacer


class Provider(ABC):
    """One LLM provider. Subclasses live one per file in `simulator/providers/` and import their SDK lazily."""

    name: str = ""
    # The environment variable its API key is read from when the settings name none (`api_key_env`): read
    # and registered as a secret by `create_provider` before the provider is built.
    key_env: ClassVar[str | None] = None
    # Judge a conversation's first criterion alone, before the others, so that its call writes the shared
    # prefix (instructions + transcript) to the provider's prompt cache and the rest read it. Only where the
    # provider caches on request (Anthropic's `cache_control`); elsewhere all criteria go at once, since
    # waiting for the first would add a call's latency to every conversation for nothing.
    warm_prompt_cache: bool = False

    @abstractmethod
    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Run one request; raise ProviderError (classified) on failure."""

    def check_model(self, model: str) -> None:  # noqa: B027 - optional hook
        """Raise UserError when `model` cannot be used at all, before any conversation starts."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default has nothing to release."""
