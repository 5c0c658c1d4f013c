"""What the fake LLM does beyond the wire: calls and replies, latency, faults, default answers, caching."""

from __future__ import annotations

__all__ = [
    "Api",
    "FakeCall",
    "FakeReply",
    "FaultConfig",
    "FaultKind",
    "LatencyModel",
    "PromptCache",
    "Responder",
    "default_responder",
    "minimal_instance",
    "tool_using_responder",
]

import hashlib
import json
import math
import random
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from simulator.providers.base import ChatMessage
from simulator.testing.fake_llm_formats import CacheUnit, ParsedRequest

Api = Literal["anthropic", "openai"]
FaultKind = Literal["error_500", "error_429", "timeout", "malformed"]


@dataclass(frozen=True)
class FakeCall:
    """One request, normalised across both APIs (the raw body and headers are kept as well)."""

    api: Api
    model: str
    system: str | None
    messages: list[ChatMessage]
    tools: list[dict[str, Any]]  # normalised: {"name", "description", "parameters"}
    schema: dict[str, Any] | None  # Anthropic output_config.format / OpenAI response_format schema
    temperature: float | None
    stream: bool
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names; kept in memory only, never written to the log file
    # The tool results the request carries, in order: {"id", "content", "is_error"} (both APIs).
    tool_results: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class FakeReply:
    """What the fake model answers; a non-200 status becomes an error body in the API's own format."""

    text: str = ""
    # A call's arguments: a mapping, or text sent as it is (OpenAI's format carries arguments as text, so a
    # model's broken JSON can be played: `("record_triage", "{not json")`).
    tool_call: tuple[str, dict[str, Any] | str] | None = None
    # Several calls in one reply (a model asking for two tools at once); after `tool_call`, if both are set.
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    status: int = 200
    error_type: str | None = None
    retry_after: float | None = None
    malformed: bool = False

    def all_tool_calls(self) -> list[tuple[str, dict[str, Any] | str]]:
        """Every tool call of the reply, in order."""
        return ([self.tool_call] if self.tool_call is not None else []) + list(self.tool_calls)


Responder = Callable[[FakeCall], FakeReply | str | Awaitable[FakeReply | str]]


@dataclass(frozen=True)
class LatencyModel:
    """Seconds before the first byte: fixed, uniform(low, high) or lognormal(median, sigma)."""

    kind: Literal["fixed", "uniform", "lognormal"] = "fixed"
    low: float = 0.0  # fixed: the value; uniform: lower bound; lognormal: the median
    high: float = 0.0  # uniform: upper bound
    sigma: float = 0.0  # lognormal: sigma of the underlying normal

    def __post_init__(self) -> None:
        if self.low < 0 or self.high < 0 or self.sigma < 0:
            raise ValueError("latency values must not be negative")
        if self.kind == "uniform" and self.high < self.low:
            raise ValueError("uniform latency needs low <= high")

    @classmethod
    def fixed(cls, seconds: float) -> LatencyModel:
        return cls("fixed", low=seconds)

    @classmethod
    def uniform(cls, low: float, high: float) -> LatencyModel:
        return cls("uniform", low=low, high=high)

    @classmethod
    def lognormal(cls, median: float, sigma: float) -> LatencyModel:
        return cls("lognormal", low=median, sigma=sigma)

    def sample(self, rng: random.Random) -> float:
        """One delay in seconds, drawn from the seeded generator."""
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high)
        if self.kind == "lognormal":
            return 0.0 if self.low == 0 else rng.lognormvariate(math.log(self.low), self.sigma)
        return self.low


@dataclass(frozen=True)
class FaultConfig:
    """Shares (0..1) of requests that fail, drawn from a seeded generator, plus `fail_first_n` for scripts."""

    error_500: float = 0.0
    error_429: float = 0.0
    timeout: float = 0.0  # hold the request `timeout_s`, then answer late (client timeouts fire first)
    malformed: float = 0.0  # answer 200 with a body that is not valid JSON
    retry_after_s: float | None = 1.0  # Retry-After header sent with the 429s
    retry_after_date: bool = False  # ... as an HTTP date (whole seconds, rounded up) instead of seconds
    instant_429: bool = False  # answer the 429s at once, without the latency (as gateways refuse)
    timeout_s: float = 30.0
    fail_first_n: int = 0  # the first n calls get `fail_first_kind`, whatever the shares say
    fail_first_kind: FaultKind = "error_429"

    def __post_init__(self) -> None:
        shares = (self.error_500, self.error_429, self.timeout, self.malformed)
        if any(not 0.0 <= share <= 1.0 for share in shares) or sum(shares) > 1.0 + 1e-9:
            raise ValueError("fault shares must each be within 0..1 and sum to at most 1")

    def pick(self, index: int, rng: random.Random) -> FaultKind | None:
        """The fault for call number `index` (0-based), or None."""
        if index < self.fail_first_n:
            return self.fail_first_kind
        if not (self.error_500 or self.error_429 or self.timeout or self.malformed):
            return None
        draw = rng.random()
        for kind, share in (
            ("error_500", self.error_500),
            ("error_429", self.error_429),
            ("timeout", self.timeout),
            ("malformed", self.malformed),
        ):
            if draw < share:
                return kind  # type: ignore[return-value]
            draw -= share
        return None


_HINTS_RE = re.compile(r"\{([^{}]*)\}\s*$")


def _with_hints(schema: dict[str, Any]) -> dict[str, Any]:
    """Read back constraints the anthropic SDK moved into the description (`... {minimum: 1}`)."""
    found = _HINTS_RE.search(schema.get("description") or "")
    if not found:
        return schema
    hints: dict[str, Any] = {}
    for item in found.group(1).split(", "):
        key, _, value = item.partition(": ")
        try:
            hints[key.strip()] = json.loads(value)
        except ValueError:
            hints[key.strip()] = value
    return {**hints, **schema}


def minimal_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small valid JSON value for a schema: first enum value, empty strings/lists, zero, all properties."""
    root = schema if root is None else root
    schema = _with_hints(schema)
    if "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part] if part else node
        return minimal_instance(node, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return minimal_instance(options[0], root)
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type", "object" if "properties" in schema else None)
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: minimal_instance(sub, root) for name, sub in props.items()}
    if kind == "array":
        items = schema.get("items") or {}
        return [minimal_instance(items, root) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "x" * schema.get("minLength", 0)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(0, low + (1 if "exclusiveMinimum" in schema else 0))
        value = min(value, schema.get("maximum", value))
        return math.ceil(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    return None


def _forced_tool(call: FakeCall) -> str | None:
    """The tool a request forces (tool_choice), if any."""
    choice = call.body.get("tool_choice")
    names = [t["name"] for t in call.tools]
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if name:
            return str(name)
        if choice.get("type") == "any" and names:
            return names[0]
    if choice == "required" and names:
        return names[0]
    return None


def default_responder(call: FakeCall) -> FakeReply:
    """Deterministic answers: a minimal JSON instance for a schema, a forced tool's call, else short text."""
    if call.schema is not None:
        return FakeReply(text=json.dumps(minimal_instance(call.schema)))
    tool = _forced_tool(call)
    if tool is not None:
        spec: dict[str, Any] = next((t for t in call.tools if t["name"] == tool), {"parameters": {}})
        return FakeReply(tool_call=(tool, minimal_instance(spec["parameters"] or {"type": "object"})))
    last = call.messages[-1].content if call.messages else ""
    words = last.split(maxsplit=8)[:8]  # the first eight words, without splitting the rest
    return FakeReply(text=f"Fake reply to: {' '.join(words)}" if words else "Fake reply.")


_CALLED = re.compile(r"^\[(?:tool_use|tool_call) ([^\]\s]+)\]", re.MULTILINE)


def tool_using_responder(call: FakeCall) -> FakeReply:
    """A scripted model that uses its tools: each turn it calls the offered tools it has not called yet in
    this conversation, two at a time (minimal arguments), reads the results and then answers in text,
    naming the results it got. Without tools it is the default responder. Deterministic; its answers mean
    nothing: it exercises the tool plumbing (`test:tools`)."""
    if not call.tools or call.schema is not None:
        return default_responder(call)
    called = {name for message in call.messages for name in _CALLED.findall(message.content)}
    waiting = [t for t in call.tools if t["name"] not in called]
    last = call.messages[-1].content if call.messages else ""
    if waiting and not last.startswith("[tool_result]"):
        return FakeReply(
            tool_calls=tuple(
                (t["name"], minimal_instance(t.get("parameters") or {"type": "object"})) for t in waiting[:2]
            )
        )
    if last.startswith("[tool_result]"):
        if waiting:
            return FakeReply(
                text="Let me check one more thing.",
                tool_calls=tuple(
                    (t["name"], minimal_instance(t.get("parameters") or {"type": "object"}))
                    for t in waiting[:2]
                ),
            )
        return FakeReply(text=f"I recommend what the tools said: {' '.join(last.split()[1:12])}")
    return default_responder(call)


class PromptCache:
    """Remembers prompt prefixes by chained hash, to report cached input tokens the way each API does."""

    def __init__(self, max_entries: int = 200_000) -> None:
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._max = max_entries

    @staticmethod
    def _chain(seed: str, units: list[CacheUnit]) -> list[tuple[bytes, int]]:
        """(key, cumulative tokens) at every unit boundary."""
        out: list[tuple[bytes, int]] = []
        digest, tokens = hashlib.blake2b(seed.encode(), digest_size=16).digest(), 0
        for unit in units:
            digest = hashlib.blake2b(digest + unit.key.encode(), digest_size=16).digest()
            tokens += unit.tokens
            out.append((digest, tokens))
        return out

    def _remember(self, key: bytes) -> None:
        self._seen[key] = None
        self._seen.move_to_end(key)
        if len(self._seen) > self._max:
            self._seen.popitem(last=False)

    def _longest_hit(self, chain: list[tuple[bytes, int]], upto: int) -> int:
        return next((tokens for key, tokens in reversed(chain[: upto + 1]) if key in self._seen), 0)

    def anthropic(self, parsed: ParsedRequest) -> tuple[int, int]:
        """(cache_read, cache_creation): explicit breakpoints, read back at any earlier block boundary."""
        marks = [i for i, unit in enumerate(parsed.cache_units) if unit.marked]
        if not marks:
            return 0, 0
        chain = self._chain(parsed.cache_seed, parsed.cache_units)
        read = self._longest_hit(chain, marks[-1])
        for i in marks:
            self._remember(chain[i][0])
        return read, chain[marks[-1]][1] - read

    def openai(self, parsed: ParsedRequest) -> int:
        """cached_tokens: the longest message prefix seen before (OpenAI caches automatically)."""
        chain = self._chain(parsed.cache_seed, parsed.cache_units)
        read = self._longest_hit(chain, len(chain) - 1)
        for key, _ in chain:
            self._remember(key)
        return read
