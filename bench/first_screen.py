"""The first screen of the red-team and demo reports, as images for the docs (issue 44): the terminal at
80 × 24 (an SVG recorded by rich) and the HTML report at 1366 × 768 (a PNG from headless Chromium).

    python bench/first_screen.py     # writes docs/images/first-screen-*.{svg,png}
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.analysis.rundata import load_run  # noqa: E402
from simulator.report.html import render_html  # noqa: E402
from simulator.report.model import build_report  # noqa: E402
from simulator.report.terminal import render_terminal  # noqa: E402

IMAGES = ROOT / "docs" / "images"


def _terminal(report: object, name: str) -> None:
    wide = Console(record=True, width=80, file=open("/dev/null", "w"))  # noqa: SIM115
    render_terminal(report, wide)  # type: ignore[arg-type]
    first = "\n".join(wide.export_text().splitlines()[:24])
    screen = Console(record=True, width=80, file=open("/dev/null", "w"))  # noqa: SIM115
    screen.print(first, highlight=False, markup=False)
    screen.save_svg(
        str(IMAGES / f"first-screen-{name}-terminal.svg"), title=f"simulator report ({name}), 80 × 24"
    )


def _html(report: object, name: str, folder: Path) -> None:
    from playwright.sync_api import sync_playwright

    page_file = folder / f"{name}.html"
    page_file.write_text(render_html(report), encoding="utf-8")  # type: ignore[arg-type]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(page_file.as_uri())
        page.screenshot(path=str(IMAGES / f"first-screen-{name}-html.png"))
        browser.close()


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, suite in (
            ("redteam", "scenarios/redteam/suite.yaml"),
            ("demo", "scenarios/triage/suite.yaml"),
        ):
            out = Path(tmp) / name
            subprocess.run(
                [sys.executable, "-m", "simulator", "run", suite, "--out", str(out), "--no-progress"],
                cwd=ROOT, capture_output=True, check=False,
            )  # fmt: skip
            report = build_report(load_run(out))
            _terminal(report, name)
            _html(report, name, Path(tmp))
            print(f"wrote docs/images/first-screen-{name}-terminal.svg and -html.png")


if __name__ == "__main__":
    main()
