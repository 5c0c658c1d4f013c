"""Headless Chromium for the browser tests, driven by Playwright with the system browser (Debian
`chromium`; never `playwright install`). A missing browser or driver skips, unless SIMULATOR_REQUIRE_ALL=1
(as in CI) makes it a failure."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def skip_unless_available() -> None:
    """Skip when Chromium or Playwright is missing; fail instead when SIMULATOR_REQUIRE_ALL=1."""
    missing = []
    if not Path(CHROMIUM).is_file():
        missing.append("chromium (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install playwright)")
    if not missing:
        return
    message = f"browser tests need {' and '.join(missing)}"
    if os.environ.get("SIMULATOR_REQUIRE_ALL") == "1":
        pytest.fail(message + " (SIMULATOR_REQUIRE_ALL=1)")
    pytest.skip(message)


class Watched:
    """A page with its console errors, uncaught exceptions and requested URLs collected as they happen."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: m.type in ("error", "assert") and self.errors.append(m.text))
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.requests.append(r.url))


@asynccontextmanager
async def chromium(width: int = 1400, height: int = 900) -> AsyncIterator[Watched]:
    """One page of the system Chromium, driven by Playwright's async API (the tests' event loop)."""
    skip_unless_available()
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            context = await browser.new_context(viewport={"width": width, "height": height})
            yield Watched(await context.new_page())
        finally:
            await browser.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve `app` with uvicorn on a free loopback port in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "the desk did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def screenshot_dir(tmp_path: Path) -> Path:
    """Where screenshots go: SIMULATOR_SCREENSHOTS (docs/images to refresh the README's), else tmp_path."""
    chosen = os.environ.get("SIMULATOR_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder
