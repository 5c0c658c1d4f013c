"""The review desk in real headless Chromium (Playwright with the system browser): reading, blind
labelling, editing with live validation, and talking to the bot, with a screenshot of each page
(SIMULATOR_SCREENSHOTS=docs/images refreshes the README's)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.record.folder import RunFolder
from simulator.serve import DeskConfig, create_app
from simulator.testing.fake_llm import FakeLLMServer
from tests.browser_support import Watched, chromium, live_server, screenshot_dir
from tests.desk_support import DeskFolders, make_desk_folders, talk_folder
from tests.fake_judge import FakeJudge

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(FakeJudge()) as server:
        yield server


@pytest.fixture(scope="module")
def desk(
    tmp_path_factory: pytest.TempPathFactory, judge_server: FakeLLMServer
) -> Iterator[tuple[str, DeskFolders]]:
    root = tmp_path_factory.mktemp("desk-browser")
    folders = make_desk_folders(root)
    folders.scenarios = talk_folder(root / "project", judge_server.base_url)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FAKE_JUDGE_KEY", "test-key")
        with live_server(create_app(DeskConfig(folders.runs, folders.scenarios, folders.judges))) as url:
            yield url, folders


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return screenshot_dir(tmp_path)


def _only_the_desk(tab: Watched, url: str) -> None:
    """No console error (a CSP violation is one) and no request to anything but the desk."""
    assert tab.errors == []
    assert all(u.startswith((url, "data:")) for u in tab.requests), tab.requests


async def test_runs_page_and_reader_page_through_a_filter(desk: tuple[str, DeskFolders], shots: Path) -> None:
    url, _ = desk
    async with chromium() as tab:
        page = tab.page
        await page.goto(url + "/")
        assert await page.locator("tr.run").count() == 2
        await page.screenshot(path=str(shots / "desk-runs.png"), full_page=True)
        await page.click('a[href="/runs/tiny"]')
        await page.select_option('select[name="criterion"]', "asks-danger-signs")
        await page.select_option('select[name="result"]', "fail")
        await page.click("form.filters button")
        assert await page.locator("#shown").text_content() == "4 of 21 conversations"
        await page.click("a.conv-link >> nth=0")
        assert await page.locator("#conv-id").inner_text() == "chest-pain#1 fail"
        await page.click("#next")
        assert (await page.locator("#conv-id").inner_text()).startswith("thunderclap-headache#0")
        assert "conversation 2 of 4" in await page.locator(".crumbs").inner_text()
        assert await page.locator("mark.ev-fail").count() >= 1
        await page.screenshot(path=str(shots / "desk-reader.png"), full_page=True)
        await page.click("#prev")
        assert (await page.locator("#conv-id").inner_text()).startswith("chest-pain#1")
        await page.goto(url + "/runs/tiny/report")
        assert await page.locator("#shown").text_content() == "21 of 21 conversations shown"
        _only_the_desk(tab, url)


async def test_hostile_transcripts_run_no_script(desk: tuple[str, DeskFolders]) -> None:
    url, _ = desk
    async with chromium() as tab:
        for path in ("/runs/hostile/c/hostile%230", "/runs/hostile", "/label?run=hostile"):
            await tab.page.goto(url + path)
            assert (
                await tab.page.evaluate("typeof window.__pwned + typeof window.__pwned2")
                == "undefinedundefined"
            )
            assert await tab.page.locator("main img").count() == 0
            assert await tab.page.title() != "pwned-title"
        text = await tab.page.goto(url + "/runs/hostile/c/hostile%230")
        assert text is not None
        user = await tab.page.locator(".msg.user").inner_text()
        assert "<script>window.__pwned = 1</script>" in user and "\\x1b[31mRED" in user
        _only_the_desk(tab, url)


async def test_blind_labelling_then_calibration(desk: tuple[str, DeskFolders], shots: Path) -> None:
    url, folders = desk
    async with chromium() as tab:
        page = tab.page
        await page.goto(url + "/label")
        await page.select_option("#run", "tiny")
        await page.click("#pick-run button")
        await page.fill("#labeller", "Dr Grey")
        await page.check('input[name="criterion"][value="asks-danger-signs"]')
        await page.check('input[name="sampling"][value="stratified"]')
        await page.fill('input[name="n"]', "4")
        await page.click("#start")
        for number in range(4):
            assert await page.locator("#criterion").inner_text() == "asks-danger-signs"
            assert await page.locator(".verdict").count() == 0  # blind: no verdict before the label
            assert "final state" not in await page.locator("main").inner_text()
            if number == 0:
                await page.screenshot(path=str(shots / "desk-label.png"), full_page=True)
            await page.check('input[name="label"][value="fail"]')
            await page.fill('textarea[name="note"]', f"note {number}")
            await page.click("#save")
            await page.locator("#judge").wait_for()  # the click's page, not the one before it
            assert await page.locator("#judge").count() == 1  # the verdict shows once the label is saved
            if number == 0:
                await page.screenshot(path=str(shots / "desk-label-saved.png"), full_page=True)
            await page.click("#next-item")
        await page.locator("#done").wait_for()
        assert await page.locator("#done").count() == 1
        labels = [x for x in RunFolder.open(folders.runs / "tiny").labels() if x.labeller == "Dr Grey"]
        assert len(labels) == 4 and sorted(x.note or "" for x in labels) == [f"note {i}" for i in range(4)]
        # A second labeller labels the same items (as another browser would) and agrees on all but one.
        second = [x.model_copy(update={"labeller": "Dr Lee", "label": "pass" if i == 0 else x.label})
                  for i, x in enumerate(labels)]  # fmt: skip
        RunFolder.open(folders.runs / "tiny").append_labels(second)
        await page.click("text=See the calibration")
        await page.locator('section[data-criterion="asks-danger-signs"] table').nth(1).wait_for()
        judge_table, between = await page.locator(
            'section[data-criterion="asks-danger-signs"] table'
        ).all_inner_texts()
        assert "Dr Grey" in judge_table and "Dr Lee" in judge_table and "judge" in judge_table
        assert "3/4 75.0%" in between
        await page.screenshot(path=str(shots / "desk-calibration.png"), full_page=True)
        _only_the_desk(tab, url)


async def test_editing_shows_errors_live_refuses_an_invalid_save_and_saves_a_valid_one(
    desk: tuple[str, DeskFolders], shots: Path
) -> None:
    url, folders = desk
    target = folders.judges / "asks-age.yaml"
    original = target.read_text()
    async with chromium() as tab:
        page = tab.page
        await page.goto(url + "/edit")
        await page.click('a[href="/edit/judges/asks-age.yaml"]')
        assert await page.locator("#problems .ok").inner_text() == "valid"
        broken = original.replace("severity: major", "severity: huge")
        await page.fill("#text", broken)
        await page.locator("#problems li").first.wait_for()
        problem = await page.locator("#problems li").first.inner_text()
        assert re.match(rf"{re.escape(str(target))}:\d+ \[severity\]", problem), problem
        await page.screenshot(path=str(shots / "desk-editor.png"), full_page=True)
        await page.click("#save-file")
        assert "[severity]" in await page.locator("#problems").inner_text()
        assert target.read_text() == original
        assert len(tab.errors) == 1 and "422" in tab.errors[0]  # the refused save's status, nothing else
        tab.errors.clear()
        fixed = original.replace("severity: major", "severity: minor")
        await page.fill("#text", fixed)
        await page.locator("#problems .ok").wait_for()
        await page.click("#save-file")
        await page.locator("#saved").wait_for()
        assert target.read_text() == fixed
        _only_the_desk(tab, url)


async def test_talk_to_the_bot_and_see_it_judged(desk: tuple[str, DeskFolders], shots: Path) -> None:
    url, folders = desk
    before = {p.name for p in folders.runs.iterdir()}
    async with chromium() as tab:
        page = tab.page
        await page.goto(url + "/talk")
        await page.select_option("#scenario", "chest-pain")
        await page.click("#pick-scenario button")
        assert "Pressure in my chest for two hours." in await page.locator("#persona").inner_text()
        await page.fill("#name", "Dr Ada")
        await page.click("#start")
        await page.fill("#message", "I have a pressure in my chest")
        await page.click("#send")
        assert "How old are you" in await page.locator("#chat").inner_text()
        await page.fill("#message", "I am 55 and it goes into my left arm")
        await page.click("#send")
        assert "Please call 999 now." in await page.locator("#chat").inner_text()
        await page.screenshot(path=str(shots / "desk-talk.png"), full_page=True)
        await page.click("#end-talk")
        await page.locator("#conv-id").wait_for()
        verdicts = await page.locator(".verdict").all_inner_texts()
        assert any("calls-999" in v and "pass" in v for v in verdicts), verdicts
        _only_the_desk(tab, url)
    (new,) = {p.name for p in folders.runs.iterdir()} - before
    assert RunFolder.open(folders.runs / new).read_manifest().models.user == "human:Dr Ada"
