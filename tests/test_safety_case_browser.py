"""The safety case in real headless Chromium: the document renders and prints on A4, and a reviewer signs
in the desk (CSP, CSRF and Origin as a browser sends them). SIMULATOR_SCREENSHOTS=docs/images refreshes
docs/images/safety-case.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.safety.signoffs import SignOffBook
from simulator.serve import DeskConfig, create_app
from tests.browser_support import chromium, live_server, screenshot_dir
from tests.synthetic import synthetic_outcome_run
from tests.test_serve_safety import HAZARDS

pytestmark = pytest.mark.browser


async def test_a_reviewer_reads_the_document_and_signs_in_the_desk(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    synthetic_outcome_run(runs / "run-a", {f"s{i}": [True, i != 0] for i in range(4)})
    log = tmp_path / "hazards.yaml"
    log.write_text(HAZARDS, encoding="utf-8")
    data = tmp_path / "desk-data"
    with live_server(create_app(DeskConfig(runs, hazards=log, data_dir=data))) as url:
        async with chromium(1000, 1300) as tab:
            page = tab.page
            await page.goto(url + "/safety/run-a/document")
            assert (
                await page.locator("table.matrix td.unacceptable").count() == 8
            )  # ratings 4 and 5 of DCB0129
            assert await page.evaluate(
                "window.__pwned === undefined"
            )  # the hazard title's script stayed text
            await page.screenshot(path=str(screenshot_dir(tmp_path) / "safety-case.png"))
            await page.emulate_media(media="print")
            pdf = await page.pdf(format="A4", prefer_css_page_size=True)
            assert pdf.startswith(b"%PDF") and b"/MediaBox [0 0 594.9" in pdf
            await page.goto(url + "/safety/run-a")
            await page.fill("input[name=name]", "Dr Ada")
            await page.fill("input[name=role]", "Clinical Safety Officer")
            await page.check("input[value=reject]")
            await page.fill("textarea[name=comment]", "under-triage of s0")
            await page.click("#sign button")
            await page.wait_for_selector(".signoff.current")
            assert "signed for run run-a on this evidence" in await page.inner_text("#signoffs")
            assert tab.errors == []  # no CSP violation, no script error
    (signoff,) = SignOffBook(data).all()
    assert (signoff.name, signoff.decision, signoff.runs) == ("Dr Ada", "reject", ["run-a"])
