"""The HTML report's first screen in real headless Chromium (issue 31, item 1): on a laptop-sized window
the red critical rates and the first BUG line are in view before any calm figure, and "conversations passing"
is no longer the largest first number."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.analysis.rundata import load_run
from simulator.report.html import write_html
from simulator.report.model import build_report
from tests.browser_support import chromium
from tests.test_report_support import make_judged_run

pytestmark = pytest.mark.browser

LAPTOP = (1366, 768)
RED = "rgb(198, 40, 40)"


@pytest.fixture(scope="module")
def html_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lead")
    path = root / "report.html"
    write_html(build_report(load_run(make_judged_run(root))), path)
    return path


async def _box(page: object, selector: str) -> dict[str, float]:
    box = await page.locator(selector).first.bounding_box()  # type: ignore[attr-defined]
    assert box is not None, selector
    return dict(box)


async def test_the_first_screen_shows_the_findings_and_the_red_critical_rates(html_report: Path) -> None:
    width, height = LAPTOP
    async with chromium(width, height) as tab:
        page = tab.page
        await page.goto(html_report.as_uri())
        assert (await page.locator("main h2").first.text_content()) == "Summary"
        bug = await _box(page, "ul.findings li.bug")
        critical = await _box(page, ".cards.critical .card.st-fail")
        passing = await _box(page, ".cards:not(.critical) .card")
        assert critical["y"] < bug["y"] < passing["y"]
        assert bug["y"] < height  # the first BUG line is on the first screen too
        assert critical["y"] + critical["height"] <= height  # the whole red card is on the first screen
        label = await page.locator(".cards.critical .card.st-fail .label").first.text_content()
        assert label is not None and label.startswith("emergency sensitivity")
        colours = await page.eval_on_selector(
            ".cards.critical .card.st-fail",
            "el => [getComputedStyle(el).borderTopColor, getComputedStyle(el.querySelector('.value')).color]",
        )
        assert colours == [RED, RED]
        sizes = await page.evaluate(
            "[...document.querySelectorAll('#summary .card .value')].map(v => parseFloat(getComputedStyle(v).fontSize))"
        )
        first_calm = await page.locator(".cards:not(.critical) .card .label").first.text_content()
        assert first_calm == "conversations passing"
        critical_count = await page.locator(".cards.critical .card").count()
        assert min(sizes[:critical_count]) > max(
            sizes[critical_count:]
        )  # the critical figures are the largest
        assert tab.errors == []
