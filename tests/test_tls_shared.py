"""Every HTTP client the engine makes shares its library's one TLS context: building a context reads the
certificate store (about 35 ms of CPU), and a started bot's readiness check built one per try, an HTTP bot, a
voice bot, the OpenAI-endpoint bot and each SDK client one each. Counted in a fresh process, where the
certificate store is read by `SSLContext.load_verify_locations` (httpx2) or `load_default_certs`/`cafile`."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.tls import shared_ssl_context

ROOT = Path(__file__).resolve().parent.parent

# Counts every read of a certificate store in the process, then makes the clients `CLIENTS` names.
COUNTING = """
import asyncio, ssl, sys
loads = []
for name in ("load_verify_locations", "load_default_certs"):
    real = getattr(ssl.SSLContext, name)
    def counted(self, *args, _real=real, **kwargs):
        loads.append(1)
        return _real(self, *args, **kwargs)
    setattr(ssl.SSLContext, name, counted)

from pathlib import Path
import anthropic, openai
from simulator.bots.capped_transport import capped_client
from simulator.bots.http_bot import HttpBotFactory
from simulator.bots.service import BotProcess, placeholder_values
from simulator.config.bots import BotStart, HttpBotConfig
from simulator.providers._http import aiohttp_client

async def main():
    made = []
    for _ in range(3):
        made.append(HttpBotFactory(HttpBotConfig(url="http://127.0.0.1:9/chat"), Path(".")))
        made.append(capped_client(1000, 5.0))
        made.append(aiohttp_client(openai, 5.0))
        made.append(aiohttp_client(anthropic, 5.0))
    process = BotProcess(
        BotStart(command=["true"], ready={"url": "http://127.0.0.1:9/health"}), Path("."),
        placeholder_values(False), "http://127.0.0.1:9/chat",
    )
    for _ in range(5):  # five readiness tries against a port nobody listens on
        assert not await process._ready()
    return len(made)

print(asyncio.run(main()), len(loads))
"""


def test_every_client_of_a_library_shares_one_tls_context(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", COUNTING], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    clients, loads = map(int, done.stdout.split())
    assert clients == 12
    # One for httpx (the HTTP bot and the readiness check), one for httpx2 (the SDKs' clients and the capped
    # client), and what aiohttp's import builds for itself once; before, each client and try read it (18).
    assert loads <= 3, f"{loads} certificate-store reads for 12 clients and 5 readiness tries"


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_the_shared_context_is_the_librarys_default_and_verifies(library: str) -> None:
    """Shared, not weakened: the library's own default (certificates checked, host names matched)."""
    import importlib

    context = shared_ssl_context(library)
    assert context is shared_ssl_context(library)
    default = importlib.import_module(library).create_ssl_context()
    assert context.verify_mode == default.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is default.check_hostname is True
    assert context.cert_store_stats() == default.cert_store_stats()
    assert context.minimum_version == default.minimum_version
