"""A provider call sent without importing the SDK (`providers/_wire.py`): what it leaves out of the process,
and when it gives way to the SDK's own path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.config.suite import ProviderSettings
from simulator.providers._sdkpost import SdkPost
from simulator.providers._wire import WirePost
from simulator.providers.anthropic import AnthropicProvider
from simulator.providers.openai import OpenAIProvider
from tests.conftest import close_after_test

ROOT = Path(__file__).resolve().parent.parent

_SCRIPT = """
import asyncio, sys
from simulator.config.suite import ProviderSettings
from simulator.providers.{module} import {cls}
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.testing.fake_llm import FakeLLMServer, FakeReply

def reply(call):
    return FakeReply(status=429, retry_after=2) if call.messages[-1].content == "fail" else "fine"

async def main():
    async with FakeLLMServer(reply) as server:
        provider = {cls}(ProviderSettings(base_url=server.{base}))
        def ask(text):
            return provider.generate(ModelRequest(model="m", messages=[ChatMessage(role="user", content=text)]))
        answer = await ask("hello")
        print(answer.text, "{sdk}" in sys.modules, any(m.startswith("{sdk}.types") for m in sys.modules))
        try:
            await ask("fail")
        except ProviderError as exc:
            print(exc.kind, exc.status, exc.retry_after, "{sdk}" in sys.modules)
        await provider.aclose()

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("module", "cls", "base", "sdk"),
    [
        ("openai", "OpenAIProvider", "openai_base_url", "openai"),
        ("anthropic", "AnthropicProvider", "base_url", "anthropic"),
    ],
)
def test_a_call_that_succeeds_never_imports_the_sdk_and_an_error_still_is_the_sdks(
    module: str, cls: str, base: str, sdk: str
) -> None:
    script = _SCRIPT.format(module=module, cls=cls, base=base, sdk=sdk)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["fine False False", "rate_limit 429 2.0 True"]


@pytest.mark.parametrize(
    "variable", ["OPENAI_BASE_URL", "OPENAI_ORG_ID", "ANTHROPIC_CUSTOM_HEADERS", "HTTPS_PROXY", "all_proxy"]
)
def test_what_the_environment_could_change_takes_the_sdk_path(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    settings = ProviderSettings(base_url="http://127.0.0.1:9/v1")
    plain = [close_after_test(OpenAIProvider(settings)), close_after_test(AnthropicProvider(settings))]
    assert all(isinstance(p._post, WirePost) for p in plain)
    monkeypatch.setenv(
        variable, "http://127.0.0.1:9/x" if "URL" in variable or "PROXY" in variable.upper() else "x"
    )
    provider = OpenAIProvider(settings) if variable.startswith(("OPENAI", "HTTP", "all")) else None
    provider = provider or AnthropicProvider(settings)
    assert isinstance(close_after_test(provider)._post, SdkPost)
