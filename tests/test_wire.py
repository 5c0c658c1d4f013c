"""A provider call sent without importing the SDK (`providers/_wire.py`): what it leaves out of the process,
and when it gives way to the SDK's own path."""

from __future__ import annotations

import os
import re
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

def loaded():
    return " ".join(str(m in sys.modules) for m in ("{sdk}", "aiohttp", "httpx2"))

async def main(fine_url, failing_url):
    for url in (fine_url, failing_url):
        provider = {cls}(ProviderSettings(base_url=url))
        request = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hello")])
        try:
            answer = await provider.generate(request)
            print(answer.text, loaded(), any(m.startswith("{sdk}.types") for m in sys.modules))
        except ProviderError as exc:
            print(exc.kind, exc.status, exc.retry_after, loaded())
        await provider.aclose()

asyncio.run(main(*sys.argv[1:]))
"""


def _fake_server(*options: str) -> tuple[subprocess.Popen[str], str]:
    """The fake LLM server in its own process (it runs on aiohttp, which the client must not import)."""
    command = [sys.executable, "-m", "simulator.testing.fake_server", "--port", "0", "--latency-ms", "0"]
    process = subprocess.Popen([*command, *options], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    match = re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline())
    assert match, "the fake server did not print its URL"
    return process, match.group(0)


@pytest.mark.parametrize(
    ("module", "cls", "path", "sdk"),
    [("openai", "OpenAIProvider", "/v1", "openai"), ("anthropic", "AnthropicProvider", "", "anthropic")],
)
def test_a_call_that_succeeds_or_fails_imports_neither_the_sdk_nor_aiohttp(
    module: str, cls: str, path: str, sdk: str
) -> None:
    servers = [_fake_server(), _fake_server("--error-429", "1", "--retry-after", "2")]
    try:
        script = _SCRIPT.format(module=module, cls=cls, sdk=sdk)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
        urls = [url + path for _, url in servers]
        done = subprocess.run(
            [sys.executable, "-c", script, *urls], env=env, capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
    finally:
        for process, _ in servers:
            process.terminate()
            process.communicate(timeout=10)
    assert done.returncode == 0, done.stderr
    fine, failed = done.stdout.splitlines()
    assert fine.endswith("False False False False")  # no SDK, no aiohttp, not even the SDK's HTTP client
    assert fine.startswith("Fake reply to: hello")
    # An error answer is classified as the SDK's error for it would be (its kind, status, Retry-After),
    # without the SDK: importing it made the first error of a process a second or two late.
    assert failed == "rate_limit 429 2.0 False False False"


_KINDS_SCRIPT = """
import asyncio, socket, sys
from simulator.config.suite import ProviderSettings
from simulator.providers.{module} import {cls}
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from tests.support.raw_answer import RawAnswer, answer

async def stall(writer):
    await asyncio.sleep(30)

ANSWERS = [
    (answer(b"429 Too Many Requests", b"Retry-After: 3", body=b'{{"error": {{"message": "slow"}}}}'), "keep"),
    (answer(b"503 Service Unavailable", body=b"<html><body>down</body></html>"), "keep"),
    (answer(b"529 Overloaded", body=b""), "keep"),
    (answer(b"401 Unauthorized", body=b'{{"error": {{"message": "bad key"}}}}'), "keep"),
    (answer(b"400 Bad Request", b"Content-Encoding: br", body=b"\\x1b\\x03\\x00"), "keep"),
    (answer(b"404 Not Found", body=b"no such model"), "keep"),
    (answer(b"301 Moved Permanently", b"Location: https://example.com/v1"), "keep"),
    (answer(b"200 OK", b"X-Note: a\\x00b", body=b"{{}}"), "keep"),
    (answer(b"200 OK", body=b"<html>not json</html>"), "keep"),
    (b"", "reset"),
    (stall, "keep"),
]

async def main():
    request = ModelRequest(model="m", messages=[ChatMessage(role="user", content="hello")])
    said = []
    for raw, after in ANSWERS:
        async with RawAnswer(raw, after) as server:
            provider = {cls}(ProviderSettings(base_url=server.url + "{path}", timeout_s=0.5))
            try:
                await provider.generate(request)
                said.append("answered")
            except ProviderError as exc:
                said.append(f"{{exc.kind}} {{exc.status}}")
            await provider.aclose()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = {cls}(ProviderSettings(base_url=f"http://127.0.0.1:{{port}}{path}"))
    try:
        await provider.generate(request)
    except ProviderError as exc:
        said.append(f"{{exc.kind}} {{exc.status}}")
    print(", ".join(said))
    print(" ".join(m for m in ("openai", "anthropic", "aiohttp", "httpx2") if m in sys.modules) or "none")

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("module", "cls", "path", "overloaded"),
    [
        ("openai", "OpenAIProvider", "/v1", "transient 529"),
        ("anthropic", "AnthropicProvider", "", "transient 529"),
    ],
)
def test_every_kind_of_error_on_the_wire_path_is_classified_without_importing_the_sdk(
    module: str, cls: str, path: str, overloaded: str
) -> None:
    script = _KINDS_SCRIPT.format(module=module, cls=cls, path=path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False,
        cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    kinds, imported = done.stdout.splitlines()
    assert kinds.split(", ") == [
        "rate_limit 429", "transient 503", overloaded, "permanent 401", "permanent 400", "permanent 404",
        "permanent 301", "transient None", "transient None", "transient None", "transient None",
        "transient None",
    ]  # fmt: skip
    assert imported == "none"


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
