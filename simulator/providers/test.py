"""The `test:` provider: the project's fake LLM server, started in process, behind the real OpenAI SDK.

`test:default` needs no key and no network: it answers deterministically (a minimal JSON instance when a
schema is asked for, the forced tool's call, else a short reply), in the real wire format, so a team can run
a chat bot, an LLM user or an LLM judge end to end before it has a key, and see how its suite behaves under
latency and faults: `test:default?latency_ms=200&error_429=0.1&error_500=0.05&seed=3`.

Its answers mean nothing; it tests the plumbing (configuration, adapters, retries, reports), never a bot.

`test:MODULE:FUNCTION` serves the answers of a responder of your own instead (a function that takes a
`simulator.testing.FakeCall` and returns a `FakeReply` or text), imported from the folder you run from like
a python bot: a scripted model whose behaviour you know, e.g. `examples.triage_chat_model:respond`, a
stand-in for a chat model that follows the questions its system prompt lists (docs/loop.md).
"""

from __future__ import annotations

__all__ = ["TestProvider", "parse_test_model"]

import asyncio
import importlib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from simulator.errors import UserError
from simulator.providers.base import ModelRequest, ModelResponse, Provider
from simulator.providers.settings import ProviderSettings

_KNOBS = ("latency_ms", "error_429", "error_500", "timeout", "seed")
_RESPONDER = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class TestModel:
    """What a `test:` model name asks the fake server to do."""

    behaviour: str = "default"  # or MODULE:FUNCTION, a responder of your own
    latency_ms: float = 0.0
    error_429: float = 0.0
    error_500: float = 0.0
    timeout: float = 0.0
    seed: int = 0


def parse_test_model(model: str) -> TestModel:
    """`default?latency_ms=100&error_429=0.1` -> TestModel; a mistake names the knob and the fix."""
    behaviour, _, query = model.partition("?")
    if behaviour != "default" and not _RESPONDER.match(behaviour):
        raise UserError(
            f"test model '{model}': the behaviour is 'default' (test:default) or a responder of your own "
            "named MODULE:FUNCTION (test:examples.triage_chat_model:respond)"
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


def _responder(behaviour: str) -> Any:
    """None for the default answers, else the MODULE:FUNCTION responder, imported (a mistake names it)."""
    if behaviour == "default":
        return None
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
                from simulator.providers.openai import OpenAIProvider
                from simulator.testing.fake_llm import FakeLLMServer, FaultConfig, LatencyModel

                wanted = parse_test_model(model)
                server = FakeLLMServer(
                    _responder(wanted.behaviour),
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
