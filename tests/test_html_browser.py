"""The HTML report in real headless Chromium (Debian `chromium`), driven over the DevTools protocol."""

from __future__ import annotations

import asyncio
import base64
import html
import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from simulator.analysis import load_run
from simulator.report.html import write_html
from simulator.report.model import ReportOptions, build_report
from tests.test_report_support import SCRIPT, make_judged_run

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"


class Browser:
    """Headless Chromium with one page, its console errors and exceptions collected as they happen."""

    def __init__(self, profile: Path) -> None:
        self.profile = profile
        self.process: subprocess.Popen[bytes] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Browser:
        port_file = self.profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)  # a stale file from an earlier browser would name a dead port
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "--window-size=1400,1000",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await self._connect(port_file)
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def _connect(self, port_file: Path) -> None:
        for _ in range(300):
            if port_file.is_file() and port_file.read_text().strip():
                break
            assert self.process is not None and self.process.poll() is None, "chromium exited at start"
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json(content_type=None)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            await self.send(method)

    async def _read(self) -> None:
        assert self.ws is not None
        async for message in self.ws:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            else:
                self.events.append(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        number = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[number] = future
        await self.ws.send_json({"id": number, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 60)
        assert "error" not in reply, reply
        return reply.get("result", {})

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        for _ in range(600):
            if any(e.get("method") == "Page.loadEventFired" for e in self.events):
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the page never finished loading")

    async def eval(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def console_errors(self) -> list[str]:
        """Uncaught exceptions, console.error calls and browser log errors (CSP violations among them)."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params.get("exceptionDetails", {}))[:300])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(json.dumps(params.get("args", []))[:300])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    async def screenshot(self, path: Path, height: int) -> None:
        await self.send(
            "Emulation.setDeviceMetricsOverride", width=1400, height=height, deviceScaleFactor=1, mobile=False
        )
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    async def __aexit__(self, *exc: object) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture(scope="module")
def html_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    run = make_judged_run(root)
    path = root / "report.html"
    write_html(build_report(load_run(run), ReportOptions(target=0.05)), path)
    return path


async def test_report_opens_without_console_errors_and_shows_the_tables(
    html_report: Path, tmp_path: Path
) -> None:
    async with Browser(tmp_path / "profile") as browser:
        await browser.open(html_report.as_uri())
        assert await browser.eval("document.querySelectorAll('table').length") >= 10
        headings = await browser.eval("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
        for expected in (
            "Summary",
            "Errors of omission",
            "Criteria",
            "Scenarios",
            "Run health",
            "Transcripts",
        ):
            assert any(h.startswith(expected) for h in headings), headings
        matrix = await browser.eval("document.querySelector('#outcome table').innerText")
        assert "emergency" in matrix and "no decision" in matrix
        assert await browser.eval("document.querySelectorAll('svg.ci').length") > 10
        assert (
            await browser.eval("document.getElementById('shown').textContent")
            == "21 of 21 conversations shown"
        )
        assert browser.console_errors() == []


async def test_a_script_in_a_transcript_does_not_run(html_report: Path, tmp_path: Path) -> None:
    async with Browser(tmp_path / "profile") as browser:
        await browser.open(html_report.as_uri())
        assert await browser.eval("typeof window.__pwned") == "undefined"
        assert await browser.eval("typeof window.__pwned2") == "undefined"
        # Only the report's own script exists, and the injected markup is shown as text.
        assert await browser.eval("document.scripts.length") == 1
        assert await browser.eval("document.querySelectorAll('details.conv img').length") == 0
        shown = await browser.eval(
            "document.querySelector('details.conv[data-tags*=\"|skin|\"] .msg.user').textContent"
        )
        assert SCRIPT in shown
        assert browser.console_errors() == []


async def test_filters_by_criterion_result_and_tag(html_report: Path, tmp_path: Path) -> None:
    async with Browser(tmp_path / "profile") as browser:
        await browser.open(html_report.as_uri())

        async def choose(select: str, value: str) -> str:
            return await browser.eval(
                f"(() => {{ const s = document.getElementById('{select}'); s.value = {json.dumps(value)};"
                " s.dispatchEvent(new Event('change')); return document.getElementById('shown').textContent })()"
            )

        assert await choose("f-criterion", "outcome.triage_level") == "21 of 21 conversations shown"
        assert await choose("f-result", "fail") == "10 of 21 conversations shown"
        assert await choose("f-tag", "high-stakes") == "4 of 21 conversations shown"
        visible = await browser.eval(
            "Array.from(document.querySelectorAll('details.conv:not(.hidden) .id')).map(x => x.textContent)"
        )
        assert visible == [
            "chest-pain#1",
            "thunderclap-headache#0",
            "thunderclap-headache#1",
            "thunderclap-headache#2",
        ]
        await choose("f-tag", "")
        await choose("f-criterion", "")
        # A judge error is a verdict result; by status, the 3 crashed conversations and the judge error.
        assert await choose("f-result", "error") == "1 of 21 conversations shown"
        await choose("f-result", "")
        assert await choose("f-status", "error") == "4 of 21 conversations shown"
        await choose("f-status", "")
        # Clicking a verdict outlines its evidence in the transcript.
        await browser.eval("document.querySelector('details.conv[data-tags*=\"|skin|\"]').open = true")
        outlined = await browser.eval(
            "(() => { const c = document.querySelector('details.conv[data-tags*=\"|skin|\"]');"
            " c.querySelector('.verdict[data-criterion=\"asks-pregnancy\"]').click();"
            " return Array.from(c.querySelectorAll('mark.active')).map(m => m.textContent) })()"
        )
        assert outlined == [SCRIPT]
        assert browser.console_errors() == []


async def test_the_page_makes_no_network_requests(html_report: Path, tmp_path: Path) -> None:
    text = html.unescape(html_report.read_text(encoding="utf-8"))
    assert "connect-src 'none'" in text and "default-src 'none'" in text
    async with Browser(tmp_path / "profile") as browser:
        await browser.send("Network.enable")
        await browser.open(html_report.as_uri())
        await browser.eval("document.querySelectorAll('details.conv').forEach(d => d.open = true)")
        urls = [
            e["params"]["request"]["url"]
            for e in browser.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        assert urls and all(u.startswith(("file:", "data:")) for u in urls), urls
        assert browser.console_errors() == []
