"""Model calls with the engine's policy: one adaptive connection limit per provider shared by every role,
bounded retries in one place, an opt-in response cache, and no secret sent or read back: every request but
the bot's is redacted as the run's records are before it leaves the process (`redacted_request`), its answer
before its caller reads it (`redacted_response`), and every provider error's message. The secrets are known
before any call: a hub made for a suite registers the suite's, a provider registers the key it reads
(`create_provider`)."""

from __future__ import annotations

__all__ = [
    "CallScope",
    "ModelClient",
    "ModelHub",
    "call_scope",
    "current_scope",
    "redacted_request",
    "redacted_response",
    "resolve_user_model",
    "set_scope",
]

import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenacity import AsyncRetrying, retry_if_exception

from simulator.config.providers import DEFAULT_MODELS, split_model
from simulator.providers import create_provider
from simulator.providers.base import (
    ChatMessage,
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    ToolCall,
)
from simulator.providers.limiter import AdaptiveLimiter
from simulator.providers.pacer import Pacer
from simulator.providers.waits import RetryWaits
from simulator.record.redact import contains_secret, redact, redact_text, register_secrets, suite_secrets

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from simulator.config.providers import ProviderSettings
    from simulator.config.suite import Suite
    from simulator.providers.cache import ResponseCache


@dataclass
class CallScope:
    """The sample the calls made now belong to (scenario repeat, character-break attempt), and the cache
    hits to report in its record. The runner sets it per conversation; it lives in a context variable so
    users, bots and judges need not pass it along."""

    repeat: int = 0
    attempt: int = 0
    cache_hits: Counter[str] = field(default_factory=Counter)
    # The judge's sample of an identical request (`--samples k`): a separate draw, never a cache hit.
    sample: int = 0
    # When the work these calls belong to began (monotonic): calls waiting for a connection are served
    # oldest work first, so a conversation delayed by a Retry-After is not overtaken by newer ones.
    since: float = field(default_factory=time.monotonic)


_SCOPE: ContextVar[CallScope | None] = ContextVar("simulator_call_scope", default=None)


def current_scope() -> CallScope | None:
    return _SCOPE.get()


def set_scope(scope: CallScope | None) -> None:
    """Set the scope for the rest of the current task (each asyncio task has its own copy)."""
    _SCOPE.set(scope)


class call_scope:
    """`with call_scope(repeat=record.repeat):` around calls that belong to one repeat (e.g. re-judging).

    A class, not a generator context manager: every judge call enters one, and this is cheaper."""

    __slots__ = ("_scope", "_token")

    def __init__(self, repeat: int = 0, attempt: int = 0, sample: int = 0) -> None:
        outer = _SCOPE.get()
        since = (
            outer.since if outer is not None else time.monotonic()
        )  # a judge call is as old as its conversation
        self._scope = CallScope(repeat, attempt, sample=sample, since=since)
        self._token: Token[CallScope | None] | None = None

    def __enter__(self) -> CallScope:
        self._token = _SCOPE.set(self._scope)
        return self._scope

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _SCOPE.reset(self._token)


@dataclass
class CallStats:
    """What one provider's calls did, over every role: for the manifest and the bench."""

    attempts: int = 0  # requests sent to the provider, retries included
    retries: int = 0
    rate_limits: int = 0
    transient_errors: int = 0
    failed: int = 0  # calls that raised after their retries, or at once for a permanent error
    cache_hits: Counter[str] = field(default_factory=Counter)
    cache_misses: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "retries": self.retries,
            "rate_limits": self.rate_limits,
            "transient_errors": self.transient_errors,
            "failed": self.failed,
            "cache_hits": dict(self.cache_hits),
            "cache_misses": dict(self.cache_misses),
        }


# The roles whose requests are sent as they are: the bot under test (a chat bot's model, its tool loop) is sent
# what it would be sent in service, as what it is tested on. Every other role (the simulated user, the
# judges, the fidelity audit, the proposal writer, drafting) is sent its request redacted.
SENT_AS_IS = frozenset({"bot"})


def redacted_request(request: ModelRequest) -> ModelRequest:
    """`request` as a model provider may be sent it: its system prompt, messages and tool calls' arguments
    with every secret and credential replaced as the run's records replace them (record/redact.py:
    `[redacted]`, `[API_KEY]`, `password: [PASSWORD]`), so a bot that leaks a key to the simulated user
    leaks it to no provider, its cache or a raw exchange. The same object when there is nothing to replace
    (the common case: each text's check is remembered by `contains_secret`, a transcript shown to N
    judges is searched once)."""
    system = redact_text(request.system) if request.system else request.system
    messages = [_redacted_message(message) for message in request.messages]
    if system is request.system and all(m is o for m, o in zip(messages, request.messages, strict=True)):
        return request
    return request.model_copy(update={"system": system, "messages": messages})


def _redacted_message(message: ChatMessage) -> ChatMessage:
    content = redact_text(message.content)
    calls = tuple(_redacted_call(call) for call in message.tool_calls)
    if content is message.content and all(c is o for c, o in zip(calls, message.tool_calls, strict=True)):
        return message
    return message.model_copy(update={"content": content, "tool_calls": calls})


def _redacted_call(call: ToolCall) -> ToolCall:
    if not call.arguments or not contains_secret(json.dumps(call.arguments, ensure_ascii=False)):
        return call
    return call.model_copy(update={"arguments": redact(call.arguments)})


def redacted_response(response: ModelResponse) -> ModelResponse:
    """`response` as a role whose requests are redacted reads it: its text, parsed answer, tool calls'
    arguments and raw exchange with every secret and credential replaced as the records replace them, so
    a provider key (or the suite's token) a model echoes reaches no proposal, draft, verdict or terminal.
    The same object when there is nothing to replace."""
    text = redact_text(response.text)
    parsed = response.parsed
    if parsed is not None and contains_secret(json.dumps(parsed, ensure_ascii=False)):
        parsed = redact(parsed)
    calls = [_redacted_call(call) for call in response.tool_calls]
    if (
        text is response.text
        and parsed is response.parsed
        and all(c is o for c, o in zip(calls, response.tool_calls, strict=True))
    ):
        return response
    update = {"text": text, "parsed": parsed, "tool_calls": calls, "raw": redact(response.raw)}
    return response.model_copy(update=update)


def _redacted_error(exc: ProviderError) -> ProviderError:
    """`exc` with its message redacted, its kind, status and waits kept."""
    return ProviderError(
        exc.kind,
        redact_text(str(exc)),
        retry_after=exc.retry_after,
        status=exc.status,
        rate_limits=exc.rate_limits,
    )


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.kind != "permanent"


def rate_limited(exc: BaseException | None) -> bool:
    """A 429, or a provider saying it is overloaded (Anthropic's 529): a reason to wait, never to give up
    after a few attempts."""
    if not isinstance(exc, ProviderError):
        return False
    return exc.kind == "rate_limit" or exc.status == 529


class ModelClient:
    """One provider connection shared by every role (users, chat bots, judges) that names it.

    Role views (`for_role`) share the provider, its limiter and its statistics; each view knows its role,
    so the cache can be enabled per role and hits counted per role.
    """

    def __init__(
        self,
        provider: Provider,
        settings: ProviderSettings,
        *,
        provider_name: str | None = None,
        role: str = "other",
        cache: ResponseCache | None = None,
        limiter: AdaptiveLimiter | None = None,
        stats: CallStats | None = None,
        pacer: Pacer | None = None,
        waits: RetryWaits | None = None,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.provider_name = provider_name or provider.name
        self.role = role
        self.cache = cache
        self.limiter = limiter or AdaptiveLimiter(
            settings.max_connections,
            minimum=min(settings.min_connections, settings.max_connections)
            if settings.min_connections
            else None,
            adaptive=settings.adaptive_concurrency,
        )
        self.stats = stats or CallStats()
        self.pacer = pacer or Pacer(
            settings.rpm,
            tokens_per_minute=settings.tpm,
            learn=settings.pace_from_headers,
            find=settings.find_rate,
        )
        # Calls waiting out a retry, for the run's pool (shared by every client of one hub).
        self.waits = waits or RetryWaits()
        self.redacts = role not in SENT_AS_IS

    def for_role(self, role: str, cache: ResponseCache | None = None) -> ModelClient:
        """A view of this connection for one role; the limit and statistics stay shared."""
        return ModelClient(
            self.provider,
            self.settings,
            provider_name=self.provider_name,
            role=role,
            cache=cache,
            limiter=self.limiter,
            stats=self.stats,
            pacer=self.pacer,
            waits=self.waits,
        )

    @property
    def retries(self) -> int:
        return self.stats.retries

    async def generate(self, request: ModelRequest, *, repeat: int | None = None) -> ModelResponse:
        """Answer from the cache when enabled for this role, else call the provider with retries.

        `repeat` defaults to the current CallScope's; raises the last ProviderError when retries run out.
        The request is redacted first (`redacted_request`), so the provider, the cache key and the raw
        exchange all see the same text, without a secret.
        """
        if self.redacts:
            request = redacted_request(request)
        try:
            response = await self._cached_or_called(request, repeat)
        except ProviderError as exc:
            # A provider's error may quote what it was sent or its key (`Incorrect API key: sk-...`): the
            # error every role's caller reads, writes or prints is redacted, its chain dropped with the text.
            if contains_secret(str(exc)):
                raise _redacted_error(exc) from None
            raise
        return redacted_response(response) if self.redacts else response

    async def _cached_or_called(self, request: ModelRequest, repeat: int | None) -> ModelResponse:
        if self.cache is None:
            return await self._call(request)
        scope = _SCOPE.get()
        key = self._key(request, repeat, scope)
        hit = self.cache.get(key)
        if hit is not None:
            self.stats.cache_hits[self.role] += 1
            if scope is not None:
                scope.cache_hits[self.role] += 1
            return hit
        self.stats.cache_misses[self.role] += 1
        response = await self._call(request)
        self.cache.put(key, self.provider_name, self.role, response)
        return response

    def _key(self, request: ModelRequest, repeat: int | None, scope: CallScope | None) -> str:
        from simulator.providers.cache import cache_key

        if repeat is None:
            repeat = scope.repeat if scope is not None else 0
        attempt = scope.attempt if scope is not None else 0
        sample = scope.sample if scope is not None else 0
        return cache_key(self.provider_name, self.settings.base_url, request, repeat, attempt, sample)

    def _wait(self, state: RetryCallState) -> float:
        """The server's Retry-After when it gave one, else exponential backoff with jitter."""
        cap = min(
            self.settings.backoff_max_s,
            self.settings.backoff_initial_s * 2.0 ** min(state.attempt_number - 1, 30),
        )
        backoff = cap * random.uniform(0.5, 1.0)
        outcome = state.outcome
        exc = outcome.exception() if outcome is not None else None
        retry_after = exc.retry_after if isinstance(exc, ProviderError) else None
        if retry_after:
            # The server said when: wait that (plus a little jitter, so the calls it refused together do
            # not come back together), not the exponential backoff, which is for servers that do not say.
            return retry_after * random.uniform(1.0, 1.1)
        return backoff

    async def _call(self, request: ModelRequest) -> ModelResponse:
        # Most calls succeed at once: try once before building the retry machinery (a per-call cost).
        started = time.monotonic()
        try:
            return await self._attempt(request)
        except ProviderError as exc:
            if not _retryable(exc) or (self.settings.max_attempts <= 1 and not rate_limited(exc)):
                self.stats.failed += 1
                raise
            first = exc
        return await self._retry(request, first, started)

    def _stop(self, started: float) -> Callable[[RetryCallState], bool]:
        """When to give up: a rate limit only when its time budget (`rate_limit_retry_s`) would be overrun;
        any other error after `max_attempts`, or before a wait that would overrun `max_retry_time_s`."""
        settings = self.settings

        def stop(state: RetryCallState) -> bool:
            outcome = state.outcome
            exc = outcome.exception() if outcome is not None else None
            upcoming = time.monotonic() - started + (state.upcoming_sleep or 0.0)
            if rate_limited(exc):
                return upcoming > settings.rate_limit_retry_s
            return state.attempt_number >= settings.max_attempts or upcoming > settings.max_retry_time_s

        return stop

    async def _retry(self, request: ModelRequest, first: ProviderError, started: float) -> ModelResponse:
        """Retries after a first failed attempt: tenacity's attempt 1 replays that failure, so its waits
        and stops count it exactly as if it had run the first attempt itself."""
        retrying = AsyncRetrying(
            sleep=self.waits.sleep,  # counted while it lasts: the run lends the conversation's place
            retry=retry_if_exception(_retryable),
            wait=self._wait,
            stop=self._stop(started),
            reraise=True,
        )
        attempts = 0
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    if attempts == 1:
                        raise first
                    self.stats.retries += 1
                    return await self._attempt(request, first=False)
        except ProviderError as exc:
            self.stats.failed += 1
            elapsed = time.monotonic() - started
            raise ProviderError(
                exc.kind,
                f"{exc} (gave up after {attempts} attempts in {elapsed:.1f}s{self._rate_note(exc)})",
                retry_after=exc.retry_after,
                status=exc.status,
            ) from exc
        raise AssertionError("unreachable: tenacity reraises the last error")

    def _rate_note(self, exc: ProviderError) -> str:
        """For a rate limit: the rate the provider was seen to allow, and the option that sets it."""
        if not rate_limited(exc):
            return ""
        name, seen = self.provider_name, self.pacer.describe()
        rate = f"paced at {seen['rpm']:g} requests/min ({seen['rpm_source']})" if "rpm" in seen else "unpaced"
        return (
            f"; {name}'s rate limit: {rate}; set providers.{name}.rpm (and tpm) in the suite to its budget, "
            f"or raise providers.{name}.rate_limit_retry_s"
        )

    async def _attempt(self, request: ModelRequest, *, first: bool = True) -> ModelResponse:
        pacer = self.pacer
        scope = _SCOPE.get()
        async with self.limiter.slot(first=first, since=scope.since if scope is not None else None) as slot:
            # Paced once a slot is free, so a budget learned while calls queue for slots applies to them
            # too; every attempt, retries included, spends the budget.
            tokens = _token_cost(request) if pacer.counting_tokens else 0.0
            if pacer.active:
                await pacer.wait(tokens)
            pacer.found.sent += 1
            if tokens:
                pacer.found_tokens.sent += tokens
            sent_at = time.monotonic()
            self.stats.attempts += 1
            try:
                response = await self.provider.generate(request)
            except ProviderError as exc:
                if exc.rate_limits is not None and pacer.learn:
                    pacer.observe(exc.rate_limits)
                if exc.kind == "rate_limit":
                    slot.rate_limited = True
                    self.stats.rate_limits += 1
                    if exc.rate_limits is None:  # nothing said: find the rate from the 429s themselves
                        cost = tokens or _token_cost(request)
                        pacer.refused(str(exc), cost, sent_at, self.limiter.in_flight)
                elif exc.kind == "transient":
                    self.stats.transient_errors += 1
                raise
            slot.succeeded = True
            if response.rate_limits is not None and pacer.learn:
                pacer.observe(response.rate_limits)
            return response


def _token_cost(request: ModelRequest) -> float:
    """Tokens a request counts against a token budget before it is answered: its text at about four
    characters a token, plus max_tokens (providers reserve the whole reply)."""
    chars = len(request.system or "") + sum(len(message.content) for message in request.messages)
    return chars / 4 + request.max_tokens


class ModelHub:
    """Creates one ModelClient per provider on first use, with the suite's settings for it.

    `for_role("judge")` returns a view of the same hub whose clients are bound to that role: every role
    shares each provider's connection limit, while the cache applies only to the roles the suite lists.
    """

    def __init__(
        self,
        settings: dict[str, ProviderSettings] | None = None,
        *,
        cache: ResponseCache | None = None,
        cache_roles: frozenset[str] = frozenset(),
    ) -> None:
        self._settings = settings or {}
        self._clients: dict[str, ModelClient] = {}
        self._views: dict[tuple[str, str], ModelClient] = {}
        self._checked: set[str] = set()  # specs whose model the provider has checked (shared by views)
        self._refused_seen: dict[str, int] = {}  # rate limits counted when the progress line last asked
        self.waits = RetryWaits()  # calls waiting out a retry, over every provider and role
        self.cache = cache
        self.cache_roles = cache_roles
        self.role = "other"

    @classmethod
    def create(cls, suite: Suite, *, cache: bool = True) -> ModelHub:
        """A hub with the suite's provider settings and, when it configures one and `cache` is true, its
        response cache (a relative path is relative to the suite file's folder). The suite's secrets
        (`suite_secrets`) are registered first: whatever a model answers, or a provider's error quotes, is
        written by any command without them."""
        register_secrets(suite_secrets(suite))
        config = suite.cache if cache else None
        if config is None:
            return cls(dict(suite.providers))
        from simulator.providers.cache import ResponseCache

        path = Path(config.path)
        store = ResponseCache(path if path.is_absolute() else suite.base_dir / path)
        return cls(dict(suite.providers), cache=store, cache_roles=frozenset(config.roles))

    def for_role(self, role: str) -> ModelHub:
        """A view whose clients make their calls as `role`; providers, limits and cache stay shared."""
        view = object.__new__(ModelHub)
        view.__dict__.update(self.__dict__)
        view.role = role
        return view

    def client(self, spec: str) -> tuple[ModelClient, str]:
        """The client (bound to this hub's role) and bare model name for a `provider:model` spec."""
        provider_name, model = split_model(spec)
        view = self._views.get((provider_name, self.role))
        if view is None:
            base = self._base(provider_name)
            cache = self.cache if self.role in self.cache_roles else None
            view = base.for_role(self.role, cache)
            self._views[(provider_name, self.role)] = view
        if spec not in self._checked:
            view.provider.check_model(model)  # e.g. a local model file that is not there: fail before the run
            self._checked.add(spec)
        return view, model

    def _base(self, provider_name: str) -> ModelClient:
        from simulator.config.providers import ProviderSettings

        if provider_name not in self._clients:
            settings = self._settings.get(provider_name, ProviderSettings())
            provider = create_provider(provider_name, settings)
            self._clients[provider_name] = ModelClient(
                provider, settings, provider_name=provider_name, waits=self.waits
            )
        return self._clients[provider_name]

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per provider: counts of attempts, retries, rate limits, failures, cache hits and misses."""
        return {name: client.stats.as_dict() for name, client in self._clients.items()}

    def limits(self) -> dict[str, dict[str, Any]]:
        """Per provider: what the adaptive connection limit did, and the budget the pacer kept (requests
        and tokens per minute, and where each came from: the suite, headers, or found from 429s)."""
        return {
            name: {
                "max_connections": client.limiter.maximum,
                "final": client.limiter.limit,
                "lowest": client.limiter.lowest,
                "cuts": client.limiter.cuts,
                **client.pacer.describe(),
            }
            for name, client in self._clients.items()
        }

    def waiting(self) -> str | None:
        """`waiting for the provider's rate limit: openai 598/min (found from 429s)` while a provider
        refuses calls or its budget holds them back, for the progress line: a slow run is not a hang."""
        notes = []
        for name, client in self._clients.items():
            refused = client.stats.rate_limits - self._refused_seen.get(name, 0)
            self._refused_seen[name] = client.stats.rate_limits
            held = client.pacer.found.held + client.pacer.found_tokens.held
            if not (refused or (held and client.stats.rate_limits)):
                continue
            seen = client.pacer.describe()
            rate = f" {seen['rpm']:g}/min ({seen['rpm_source']})" if "rpm" in seen else " (refusing calls)"
            notes.append(name + rate)
        return "waiting for the provider's rate limit: " + ", ".join(notes) if notes else None

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.provider.aclose()
        if self.cache is not None:
            self.cache.close()


def resolve_user_model(spec: str) -> str:
    """`auto` picks a hosted model when its key is set, else the offline rule-based user."""
    if spec != "auto":
        return spec
    if os.environ.get("ANTHROPIC_API_KEY"):
        return DEFAULT_MODELS["anthropic"]
    if os.environ.get("OPENAI_API_KEY"):
        return DEFAULT_MODELS["openai"]
    return "offline"
