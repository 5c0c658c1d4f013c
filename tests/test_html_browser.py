"""The HTML report in real headless Chromium (Debian `chromium`), driven by Playwright."""

from __future__ import annotations

import html
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.report.html import write_html
from simulator.report.model import ReportOptions, build_report
from tests.browser_support import Watched, chromium
from tests.test_report_support import SCRIPT, make_judged_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def html_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    run = make_judged_run(root)
    path = root / "report.html"
    write_html(build_report(load_run(run), ReportOptions(target=0.05)), path)
    return path


@pytest.fixture
async def tab(html_report: Path) -> AsyncIterator[Watched]:
    async with chromium() as watched:
        await watched.page.goto(html_report.as_uri())
        yield watched


async def test_report_opens_without_console_errors_and_shows_the_tables(tab: Watched) -> None:
    page = tab.page
    assert await page.locator("table").count() >= 10
    headings = await page.locator("h2").all_text_contents()
    for expected in ("Summary", "Errors of omission", "Criteria", "Scenarios", "Run health", "Transcripts"):
        assert any(h.startswith(expected) for h in headings), headings
    matrix = await page.locator("#outcome table").first.inner_text()
    assert "emergency" in matrix and "no decision" in matrix
    assert await page.locator("svg.ci").count() > 10
    assert await page.locator("#shown").text_content() == "21 of 21 conversations shown"
    assert tab.errors == []


async def test_a_script_in_a_transcript_does_not_run(tab: Watched) -> None:
    page = tab.page
    assert await page.evaluate("typeof window.__pwned") == "undefined"
    assert await page.evaluate("typeof window.__pwned2") == "undefined"
    # Only the report's own script exists, and the injected markup is shown as text.
    assert await page.evaluate("document.scripts.length") == 1
    assert await page.locator("details.conv img").count() == 0
    shown = await page.locator('details.conv[data-tags*="|skin|"] .turns > .u').first.text_content()
    assert shown is not None and SCRIPT in shown
    assert tab.errors == []


async def test_filters_by_criterion_result_and_tag(tab: Watched) -> None:
    page = tab.page

    async def choose(select: str, value: str) -> str | None:
        await page.select_option(f"#{select}", value)
        return await page.locator("#shown").text_content()

    assert await choose("f-criterion", "outcome.triage_level") == "21 of 21 conversations shown"
    assert await choose("f-result", "fail") == "10 of 21 conversations shown"
    assert await choose("f-tag", "high-stakes") == "4 of 21 conversations shown"
    visible = await page.locator("details.conv:not(.hidden) .id").all_text_contents()
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
    conversation = page.locator('details.conv[data-tags*="|skin|"]').first
    await conversation.locator("summary").click()
    await conversation.locator('.verdict[data-criterion="asks-pregnancy"]').click()
    assert await conversation.locator("mark.active").all_text_contents() == [SCRIPT]
    assert tab.errors == []


async def test_the_page_makes_no_network_requests(html_report: Path) -> None:
    text = html.unescape(html_report.read_text(encoding="utf-8"))
    assert "connect-src 'none'" in text and "default-src 'none'" in text
    async with chromium() as tab:
        await tab.page.goto(html_report.as_uri())
        await tab.page.evaluate("document.querySelectorAll('details.conv').forEach(d => d.open = true)")
        assert tab.requests and all(u.startswith(("file:", "data:")) for u in tab.requests), json.dumps(
            tab.requests
        )
        assert tab.errors == []
