"""The `test:` provider: the project's fake LLM server, started in process, behind the real OpenAI SDK.

`test:default` needs no key and no network: it answers deterministically (a minimal JSON instance when a
schema is asked for, the forced tool's call, else a short reply), in the real wire format; `test:tools`
calls every tool it is offered (two at a time, minimal arguments) before it answers, so a team can run
a chat bot, an LLM user or an LLM judge end to end before it has a key, and see how its suite behaves under
latency and faults: `test:default?latency_ms=200&error_429=0.1&error_500=0.05&seed=3`.

Its answers mean nothing; it tests the plumbing (configuration, adapters, retries, reports), never a bot.
"""

from __future__ import annotations

__all__ = ["TestProvider", "parse_test_model"]

import asyncio
from dataclasses import dataclass
from urllib.parse import parse_qsl

from simulator.errors import UserError
from simulator.providers.base import ModelRequest, ModelResponse, Provider
from simulator.providers.settings import ProviderSettings

_KNOBS = ("latency_ms", "error_429", "error_500", "timeout", "seed")


@dataclass(frozen=True)
class TestModel:
    """What a `test:` model name asks the fake server to do."""

    behaviour: str = "default"
    latency_ms: float = 0.0
    error_429: float = 0.0
    error_500: float = 0.0
    timeout: float = 0.0
    seed: int = 0


def parse_test_model(model: str) -> TestModel:
    """`default?latency_ms=100&error_429=0.1` -> TestModel; a mistake names the knob and the fix."""
    behaviour, _, query = model.partition("?")
    if behaviour not in ("default", "tools"):
        raise UserError(
            f"test model '{model}': the behaviours are 'default' (test:default) and 'tools' (test:tools, "
            "a model that calls the tools it is offered)"
        )
    values: dict[str, float] = {}
    for key, text in parse_qsl(query, keep_blank_values=True):
        if key not in _KNOBS:
            raise UserError(f"test model '{model}': unknown setting '{key}'; settings: {', '.join(_KNOBS)}")
        try:
            values[key] = float(text)
        except ValueError:
            raise UserError(f"test model '{model}': {key} must be a number, not '{text}'") from None
        share = key.startswith("error_") or key == "timeout"
        if values[key] < 0 or (share and values[key] > 1):
            raise UserError(f"test model '{model}': {key} must be {'0..1' if share else '>= 0'}")
    if sum(values.get(k, 0.0) for k in ("error_429", "error_500", "timeout")) > 1:
        raise UserError(f"test model '{model}': error_429 + error_500 + timeout must add up to at most 1")
    seed = int(values.pop("seed", 0))
    return TestModel(behaviour, seed=seed, **values)


class TestProvider(Provider):
    """One fake server per provider instance, started on first use in the running event loop."""

    name = "test"
    __test__ = False  # not a pytest test class

    def __init__(self, settings: ProviderSettings) -> None:
        self._settings = settings
        self._servers: dict[str, tuple[object, Provider]] = {}
        self._lock = asyncio.Lock()

    def check_model(self, model: str) -> None:
        parse_test_model(model)

    async def _backend(self, model: str) -> Provider:
        async with self._lock:
            if model not in self._servers:
                from simulator.providers.openai import OpenAIProvider
                from simulator.testing.fake_llm import FakeLLMServer, FaultConfig, LatencyModel
                from simulator.testing.fake_llm_behaviour import tool_using_responder

                wanted = parse_test_model(model)
                server = FakeLLMServer(
                    responder=tool_using_responder if wanted.behaviour == "tools" else None,
                    latency=LatencyModel.fixed(wanted.latency_ms / 1000),
                    faults=FaultConfig(
                        error_429=wanted.error_429, error_500=wanted.error_500, timeout=wanted.timeout
                    ),
                    seed=wanted.seed,
                )
                await server.start()
                settings = self._settings.model_copy(update={"base_url": server.openai_base_url})
                self._servers[model] = (server, OpenAIProvider(settings))
            return self._servers[model][1]

    async def generate(self, request: ModelRequest) -> ModelResponse:
        backend = await self._backend(request.model)
        response = await backend.generate(request.model_copy(update={"model": "fake-" + request.model}))
        return response.model_copy(update={"model": request.model})

    async def aclose(self) -> None:
        for server, backend in self._servers.values():
            await backend.aclose()
            await server.stop()  # type: ignore[attr-defined]
        self._servers.clear()
