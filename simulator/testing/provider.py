"""The `test:` provider (see simulator/providers/test.py for the model name it reads): the project's fake
LLM server, started in process on first use, behind the real OpenAI SDK. It lives with the fake server,
above the providers layer it plugs into by name (simulator.providers.PROVIDERS)."""

from __future__ import annotations

__all__ = ["TestProvider"]

import asyncio

from simulator.providers.base import ModelRequest, ModelResponse, Provider
from simulator.providers.openai import OpenAIProvider
from simulator.providers.settings import ProviderSettings
from simulator.providers.test import parse_test_model
from simulator.testing.fake_llm import FakeLLMServer, FaultConfig, LatencyModel
from simulator.testing.fake_llm_behaviour import tool_using_responder


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
