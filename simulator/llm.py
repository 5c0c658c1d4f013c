"""Model calls with the engine's policy: one connection limit per provider, bounded retries in one place."""

from __future__ import annotations

__all__ = ["ModelClient", "ModelHub", "resolve_user_model"]

import asyncio
import os
import random
from typing import TYPE_CHECKING

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, stop_after_delay

from simulator.providers import DEFAULT_MODELS, create_provider, split_model
from simulator.providers.base import ModelRequest, ModelResponse, Provider, ProviderError

if TYPE_CHECKING:
    from tenacity import RetryCallState

    from simulator.suite import ProviderSettings, Suite


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.kind != "permanent"


def _wait(state: RetryCallState) -> float:
    """Exponential backoff with full jitter, but never sooner than the server's Retry-After."""
    attempt = state.attempt_number
    backoff = random.uniform(0, min(30.0, 0.5 * 2 ** (attempt - 1)))
    outcome = state.outcome
    exc = outcome.exception() if outcome is not None else None
    retry_after = exc.retry_after if isinstance(exc, ProviderError) else None
    return max(backoff, retry_after or 0.0)


class ModelClient:
    """One provider connection shared by every role (users, chat bots, judges) that names it."""

    def __init__(self, provider: Provider, settings: ProviderSettings) -> None:
        self.provider = provider
        self.settings = settings
        self._slots = asyncio.Semaphore(settings.max_connections)
        self.retries = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Call the provider, retrying rate limits and transient errors; raise the last ProviderError."""
        retrying = AsyncRetrying(
            retry=retry_if_exception(_retryable),
            wait=_wait,
            stop=stop_after_attempt(self.settings.max_attempts)
            | stop_after_delay(self.settings.max_retry_time_s),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    self.retries += 1
                async with self._slots:
                    return await self.provider.generate(request)
        raise AssertionError("unreachable: tenacity reraises the last error")


class ModelHub:
    """Creates one ModelClient per provider on first use, with the suite's settings for it."""

    def __init__(self, settings: dict[str, ProviderSettings] | None = None) -> None:
        self._settings = settings or {}
        self._clients: dict[str, ModelClient] = {}
        self._checked: set[str] = set()

    @classmethod
    def for_suite(cls, suite: Suite) -> ModelHub:
        return cls(dict(suite.providers))

    def client(self, spec: str) -> tuple[ModelClient, str]:
        """The client and bare model name for a `provider:model` spec."""
        from simulator.suite import ProviderSettings

        provider_name, model = split_model(spec)
        if provider_name not in self._clients:
            settings = self._settings.get(provider_name, ProviderSettings())
            self._clients[provider_name] = ModelClient(create_provider(provider_name, settings), settings)
        client = self._clients[provider_name]
        if spec not in self._checked:
            client.provider.check_model(model)
            self._checked.add(spec)
        return client, model

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.provider.aclose()


def resolve_user_model(spec: str) -> str:
    """`auto` picks a hosted model when its key is set, else the offline rule-based user."""
    if spec != "auto":
        return spec
    if os.environ.get("ANTHROPIC_API_KEY"):
        return DEFAULT_MODELS["anthropic"]
    if os.environ.get("OPENAI_API_KEY"):
        return DEFAULT_MODELS["openai"]
    return "offline"
