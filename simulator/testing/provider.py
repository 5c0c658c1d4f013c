"""The `test:` provider (see simulator/providers/test.py for the model name it reads): the project's fake
LLM server, started in process on first use, behind the real OpenAI SDK. It lives with the fake server,
above the providers layer it plugs into by name (simulator.providers.PROVIDERS)."""

from __future__ import annotations

__all__ = ["TestProvider"]

import asyncio
import importlib
from typing import Any

from simulator.config.providers import ProviderSettings
from simulator.errors import UserError
from simulator.providers.base import ModelRequest, ModelResponse, Provider
from simulator.providers.openai import OpenAIProvider
from simulator.providers.test import parse_test_model
from simulator.testing.fake_llm import FakeLLMServer, FaultConfig, LatencyModel
from simulator.testing.fake_llm_behaviour import tool_using_responder


def _responder(behaviour: str) -> Any:
    """The fake server's responder: None for the default answers, the tool-calling one for `tools`, else the
    MODULE:FUNCTION responder, imported (a mistake names it)."""
    if behaviour == "default":
        return None
    if behaviour == "tools":
        return tool_using_responder
    module_name, _, name = behaviour.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise UserError(
            f"test model 'test:{behaviour}': cannot load the responder {behaviour} ({exc}); run from the "
            "folder that holds the module"
        ) from exc
    if not callable(found):
        raise UserError(f"test model 'test:{behaviour}': {name} is not a function")
    return found


class TestProvider(Provider):
    """One fake server per provider instance, started on first use in the running event loop."""

    name = "test"
    __test__ = False  # not a pytest test class

    def __init__(self, settings: ProviderSettings) -> None:
        self._settings = settings
        self._servers: dict[str, tuple[object, Provider]] = {}
        self._lock = asyncio.Lock()

    def check_model(self, model: str) -> None:
        _responder(parse_test_model(model).behaviour)

    async def _backend(self, model: str) -> Provider:
        async with self._lock:
            if model not in self._servers:
                wanted = parse_test_model(model)
                server = FakeLLMServer(
                    responder=_responder(wanted.behaviour),
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
