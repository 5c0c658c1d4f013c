"""The desk's review queue of drafted vignettes and its coverage map in real headless Chromium: a clinician accepts one draft
(it joins the suite as a scenario file, with their name), tries to accept an edit the suite refuses (the
problem is shown, nothing is written), and rejects one with a reason (issue 41)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.serve import DeskConfig, create_app
from tests.browser_support import chromium, live_server

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in ("scenarios/triage", "judges/triage", "examples"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    code = main(["draft", "scenarios/triage/suite.yaml", "--pathway", "examples/pathways/stroke.md",
                 "--count", "3", "--queue", "drafts"])  # fmt: skip
    assert code == 0
    (tmp_path / "runs").mkdir()
    return tmp_path


async def test_accept_edit_refused_and_reject_in_the_desk(project: Path) -> None:
    queue, into = project / "drafts", project / "scenarios/triage"
    config = DeskConfig(project / "runs", into, project / "judges/triage")
    config.drafts_dir, config.drafts_suite = queue, project / "scenarios/triage/suite.yaml"
    config.hazards = project / "examples/triage_hazards.yaml"
    first, second, third = (f"suspected-stroke-fast-emergency-0{i}" for i in (1, 2, 3))
    with live_server(create_app(config)) as url:
        async with chromium() as tab:
            page = tab.page
            await page.goto(url + "/drafts")
            assert await page.locator("#waiting li").count() == 3
            await page.click(f'a[href="/drafts/{first}"]')
            await page.fill("#reviewer", "Dr Ada Clinician")
            await page.fill("#reason", "FAST sign alone: 999")
            await page.click("#accept")
            await page.locator("#decided").wait_for()
            written = into / f"{first}.yaml"
            assert written.is_file() and not (queue / f"{first}.yaml").exists()
            assert (
                "accepted by Dr Ada Clinician" in written.read_text()
                and "draft: true" not in written.read_text()
            )
            # an edit the suite refuses: shown with the fix, nothing written, the draft still waiting
            await page.goto(f"{url}/drafts/{second}")
            edited = (await page.locator("#yaml").input_value()).replace(
                "triage_level: emergency", "triage_level: Emergency"
            )
            await page.fill("#yaml", edited)
            await page.fill("#reviewer", "Dr Ada Clinician")
            await page.fill("#reason", "ok")
            await page.click("#accept")
            problems = await page.locator("#problems").inner_text()
            assert "did you mean 'emergency'?" in problems
            assert not (into / f"{second}.yaml").exists() and (queue / f"{second}.yaml").is_file()
            tab.errors.clear()  # the refused acceptance's 400
            # reject the third with a reason
            await page.goto(f"{url}/drafts/{third}")
            await page.fill("#reviewer", "Dr Ada Clinician")
            await page.fill("#reason", "same picture as 01")
            await page.click("#reject")
            await page.locator("#decided").wait_for()
            rows = await page.locator("#decided tr").all_inner_texts()
            assert any("rejected" in r and "same picture as 01" in r for r in rows)
            assert any("accepted" in r and "Dr Ada Clinician" in r for r in rows)
            assert tab.errors == []
            # the coverage map counts the accepted draft as a vignette of the stroke control
            await page.click('nav a[href="/coverage"]')
            row = page.locator("#coverage-controls tr", has_text="CTL-02a")
            assert (await row.locator("td").nth(3).inner_text()).strip() == "3"
            assert await page.locator("#coverage-cells tr").count() > 1
            assert tab.errors == []
    decisions = [json.loads(line) for line in (queue / "decisions.jsonl").read_text().splitlines()]
    assert [(d["draft"], d["decision"]) for d in decisions] == [(first, "accepted"), (third, "rejected")]
    assert main(["validate", "scenarios/triage/suite.yaml"]) == 0
