"""A newcomer's first hour (issue 11, items 10, 12 and 15): the test suite skips what this machine cannot run
with one line saying how to enable it (and fails instead under SIMULATOR_REQUIRE_ALL=1, as in CI), a run
that judged nothing exits non-zero and says so last, the README's commands work as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.commands.core import EXIT_NOTHING_JUDGED
from simulator.config.scenario import Scenario
from simulator.config.schemas import json_schema

ROOT = Path(__file__).resolve().parent.parent


def _pytest(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest in a child process whose PATH holds only an empty folder: no Chromium to be found."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if k != "SIMULATOR_REQUIRE_ALL"}
    environ.update(PATH=str(empty), PYTHONPATH=str(ROOT), **env)
    # One process (-n 0): the child runs a file or two, worker start-up would cost more than it saves.
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-n", "0", *args]
    return subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "test",
    ["tests/test_html_browser.py::test_a_script_in_a_transcript_does_not_run", "tests/test_html_browser.py"],
)
def test_missing_chromium_skips_with_a_one_line_reason(tmp_path: Path, test: str) -> None:
    out = _pytest([test], tmp_path)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "needs headless Chromium: install it (Debian/Ubuntu: apt-get install chromium)" in out.stdout
    assert "Traceback" not in out.stdout and " passed" not in out.stdout and "skipped" in out.stdout


def test_under_require_all_a_missing_tool_fails(tmp_path: Path) -> None:
    out = _pytest(["tests/test_html_browser.py"], tmp_path, SIMULATOR_REQUIRE_ALL="1")
    assert out.returncode == 1
    assert "SIMULATOR_REQUIRE_ALL=1 turns a missing tool into a failure" in out.stdout
    assert "skipped" not in out.stdout.splitlines()[-1]


def test_ci_runs_every_test_with_require_all() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export SIMULATOR_REQUIRE_ALL=1" in script
    after = script.split("export SIMULATOR_REQUIRE_ALL=1", 1)[1]
    assert after.lstrip().startswith(
        "python -m pytest\n"
    )  # the README's command: every test, none deselected


@pytest.mark.parametrize("runs", [1, 3])
def test_a_run_where_every_conversation_errored_exits_non_zero(
    suite_dir: Path, tmp_path: Path, runs: int, capsys: pytest.CaptureFixture[str]
) -> None:
    crashing = (
        "- {id: crash-1, persona: p, goal: crash it}\n- {id: crash-2, persona: q, goal: crash it now}\n"
    )
    (suite_dir / "chest.yaml").write_text(crashing)
    out = tmp_path / "run"
    argv = ["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--runs", str(runs), "--no-progress"]
    assert main(argv) == EXIT_NOTHING_JUDGED == 3
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"nothing could be judged: all {2 * runs} conversations ended in an error")
    assert main(["run", "--resume", str(out), "--retry-errors", "--no-progress"]) == 3


def test_a_run_with_some_errors_still_exits_zero(suite_dir: Path, tmp_path: Path) -> None:
    (suite_dir / "crash.yaml").write_text("id: crash-1\npersona: p\ngoal: crash it\n")
    argv = ["run", str(suite_dir / "suite.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 0


def test_the_readme_documents_the_exit_codes() -> None:
    readme = (ROOT / "README.md").read_text()
    for code in ("`0`", "`1`", "`2`", f"`{EXIT_NOTHING_JUDGED}`", "`130`"):
        assert code in readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("paragraph", ["I am 52. The pain goes to my arm.", "Only one fact here"])
def test_the_facts_schema_accepts_the_paragraph_form_the_readme_allows(paragraph: str) -> None:
    facts = json_schema("scenario")["properties"]["facts"]
    shapes = {option["type"] for option in facts["anyOf"]}
    assert shapes == {"array", "string"}
    scenario = Scenario.model_validate({"id": "s", "persona": "p", "goal": "g", "facts": paragraph})
    assert scenario.facts and " ".join(scenario.facts) == paragraph


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, runpy\nsys.argv = ['simulator', '--help']\n"
        "try:\n    runpy.run_module('simulator', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = ('pydantic', 'asyncio', 'rich', 'yaml', 'httpx', 'anthropic', 'openai', 'aiohttp')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "usage: simulator" in out.stdout
    assert out.stderr.strip() == "[]"


def test_labels_export_works_on_a_run_without_a_judge_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's `labels export … --criterion asks-age` on the demo (no judge model: all not_judged)."""
    out = tmp_path / "run"
    suite = ROOT / "scenarios" / "triage" / "suite.yaml"
    assert main(["run", str(suite), "--out", str(out), "--runs", "1", "--no-progress"]) == 0
    sheet = tmp_path / "sheet"
    assert main(["labels", "export", str(out), "--criterion", "asks-age", "--out", str(sheet)]) == 0
    assert "blind transcripts" in capsys.readouterr().out
    rows = (sheet / "labels.csv").read_text().splitlines()
    assert rows[0].startswith("conversation_id,criterion_id,label") and len(rows) > 1
    for criterion, message in (("asks-agee", "did you mean 'asks-age'?"), ("zzz", "criteria in this run:")):
        assert (
            main(["labels", "export", str(out), "--criterion", criterion, "--out", str(tmp_path / "x")]) == 2
        )
        err = capsys.readouterr().err
        assert message in err and "has no verdicts" not in err
    (tmp_path / "file").write_text("")
    assert (
        main(["labels", "export", str(out), "--criterion", "asks-age", "--out", str(tmp_path / "file")]) == 2
    )
