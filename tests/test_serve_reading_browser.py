"""The desk's reading order in real headless Chromium (issue 31, item 16): on screen, the failing verdict is
the first card and the simulated user's checks come after every verdict on the bot; the report page opens
under the desk's header (its inline style allowed by the report's own CSP) and leads back to the run; the
runs page lists a matrix's cells."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from simulator.cli import main
from simulator.serve import create_app
from tests.browser_support import Watched, chromium, live_server, screenshot_dir
from tests.desk_support import DeskFolders, make_desk_folders
from tests.test_report_support import record, verdict, write_run

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, DeskFolders]]:
    folders = make_desk_folders(tmp_path_factory.mktemp("reading-browser"))
    rec = record("chest")
    checks = ["drift", "early_reveal", "invented_facts", "premature_end", "role_confusion"]
    verdicts = [verdict(rec, f"fidelity.{name}", "pass", kind="fidelity") for name in checks]
    verdicts += [verdict(rec, name, "pass") for name in ("asks-age", "asks-duration", "safety-netting")]
    verdicts += [verdict(rec, "zz-calls-999", "fail", severity="critical", reasoning="it never said 999")]
    write_run(folders.runs / "ordered", [rec], verdicts)
    suite = ROOT / "scenarios" / "triage-matrix" / "suite.yaml"
    assert main(["run", str(suite), "--out", str(folders.runs / "grid"), "--runs", "1", "--no-progress"]) == 0
    with live_server(create_app(folders.config())) as url:
        yield url, folders


def _only_the_desk(tab: Watched, url: str) -> None:
    """No console error (a CSP violation is one) and no request to anything but the desk."""
    assert tab.errors == []
    assert all(u.startswith((url, "data:")) for u in tab.requests), tab.requests


async def test_the_failing_verdict_is_the_first_card_on_screen(
    desk: tuple[str, DeskFolders], tmp_path: Path
) -> None:
    url, _ = desk
    async with chromium() as tab:
        page = tab.page
        await page.goto(f"{url}/runs/ordered/c/{quote('chest#0')}")
        cards = page.locator("div.verdict")
        tops = []
        for i in range(await cards.count()):
            box = await cards.nth(i).bounding_box()
            assert box is not None
            tops.append((box["y"], await cards.nth(i).get_attribute("data-criterion")))
        on_screen = [name for _, name in sorted(tops)]
        assert on_screen[0] == "zz-calls-999"
        assert on_screen[:4] == ["zz-calls-999", "asks-age", "asks-duration", "safety-netting"]
        assert all(name.startswith("fidelity.") for name in on_screen[4:])
        heading = await page.locator("#simulator-checks h3").bounding_box()
        last_bot = await page.locator("#bot-verdicts div.verdict >> nth=-1").bounding_box()
        assert heading is not None and last_bot is not None and heading["y"] > last_bot["y"]
        await page.screenshot(path=str(screenshot_dir(tmp_path) / "desk-reader-order.png"), full_page=True)
        _only_the_desk(tab, url)


async def test_the_report_opens_under_the_desks_header(desk: tuple[str, DeskFolders], tmp_path: Path) -> None:
    url, _ = desk
    async with chromium() as tab:
        page = tab.page
        await page.goto(f"{url}/runs/tiny/report")
        header = page.locator("#desk-header")
        assert await header.is_visible()
        box = await header.bounding_box()
        assert box is not None and box["y"] < 5  # the first thing on the page
        colour = await header.evaluate("el => getComputedStyle(el).backgroundColor")
        assert colour == "rgb(31, 41, 55)"  # its inline style applied under the report's CSP
        nav = page.locator("#desk-header nav")
        assert await nav.evaluate("el => getComputedStyle(el).position") == "static"  # not the report's bar
        assert await nav.locator('a[href="/label"]').is_visible()
        summary = await page.locator("#summary").bounding_box()
        assert summary is not None and summary["y"] > box["y"] + box["height"] - 1
        await page.screenshot(path=str(screenshot_dir(tmp_path) / "desk-report.png"))
        await page.click("#back-to-run")
        await page.wait_for_url(f"{url}/runs/tiny")
        assert await page.locator("h1").inner_text() == "tiny"
        _only_the_desk(tab, url)


async def test_the_runs_page_lists_the_matrix_cells(desk: tuple[str, DeskFolders]) -> None:
    url, _ = desk
    async with chromium() as tab:
        page = tab.page
        await page.goto(url + "/")
        cells = page.locator('tr.run[data-run^="grid:"]')
        assert await cells.count() == 2
        await cells.first.locator("a >> nth=0").click()
        await page.wait_for_url(f"{url}/runs/grid*")
        assert (await page.locator("h1").inner_text()).startswith("grid:")
        _only_the_desk(tab, url)
