"""The CI recipe: the shipped GitHub Actions workflow is valid (our structural check and, when installed,
check-jsonschema's vendored workflow schema), docs/ci.md shows it verbatim, its simulator commands parse,
and the README's exit-code table covers every command."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "ci" / "simulator.yml"


def workflow_problems(data: Any) -> list[str]:
    """The essentials of a GitHub Actions workflow: `on`, and jobs whose steps each `uses` or `run`."""
    if not isinstance(data, dict):
        return ["a workflow is a mapping"]
    problems = []
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1); GitHub reads it as "on".
    if "on" not in data and True not in data:
        problems.append("no `on:` trigger")
    jobs = data.get("jobs")
    if not isinstance(jobs, dict) or not jobs:
        return [*problems, "no jobs"]
    for name, job in jobs.items():
        if not isinstance(job, dict) or "runs-on" not in job:
            problems.append(f"jobs.{name}: no runs-on")
            continue
        steps = job.get("steps")
        if not isinstance(steps, list) or not steps:
            problems.append(f"jobs.{name}: no steps")
            continue
        for index, step in enumerate(steps):
            kinds = [k for k in ("uses", "run") if isinstance(step, dict) and k in step]
            if len(kinds) != 1:
                problems.append(f"jobs.{name}.steps[{index}]: needs exactly one of uses or run")
    return problems


def _load(text: str) -> Any:
    return yaml.safe_load(text)


BROKEN = [
    ("    runs-on: ubuntu-latest\n", "", "no runs-on"),
    ("\non:\n", "\nonn:\n", "no `on:` trigger"),
    ("      - uses: actions/checkout@v4\n", "      - name: nothing to do\n", "exactly one of uses or run"),
]


def test_the_shipped_workflow_has_the_essentials_and_does_what_the_recipe_says() -> None:
    text = WORKFLOW.read_text()
    data = _load(text)
    assert workflow_problems(data) == []
    steps = data["jobs"]["scenarios"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    uses = [step.get("uses", "") for step in steps]
    assert "--simulator-suite" in runs and "--junitxml" in runs  # the pytest plugin, as JUnit
    assert "simulator gate" in runs and "--require" in runs  # gates on the requirements
    assert "--markdown reports/leaderboard.md" in runs and "gh pr comment" in runs  # comments the table
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and "reports/" in upload["with"]["path"]


@pytest.mark.parametrize(("old", "new", "problem"), BROKEN)
def test_the_structural_check_rejects_a_broken_workflow(old: str, new: str, problem: str) -> None:
    text = WORKFLOW.read_text()
    assert old in text
    found = workflow_problems(_load(text.replace(old, new, 1)))
    assert any(problem in p for p in found), found


def _check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
    )


def test_check_jsonschema_accepts_the_workflow_and_rejects_broken_ones(tmp_path: Path) -> None:
    try:
        import check_jsonschema  # noqa: F401
    except ImportError:
        if os.environ.get("SIMULATOR_REQUIRE_ALL") == "1":
            raise
        pytest.skip("check-jsonschema is not installed (pip install -e '.[test]')")
    assert _check_jsonschema(WORKFLOW).returncode == 0
    text = WORKFLOW.read_text()
    for index, (old, new, _) in enumerate(BROKEN[:2]):
        broken = tmp_path / f"broken{index}.yml"
        broken.write_text(text.replace(old, new, 1))
        result = _check_jsonschema(broken)
        assert result.returncode == 1, result.stdout


def test_docs_show_the_workflow_verbatim() -> None:
    docs = (ROOT / "docs" / "ci.md").read_text()
    block = re.search(r"```yaml\n(# GitHub Actions.*?)```", docs, re.S)
    assert block is not None and block.group(1) == WORKFLOW.read_text()


def _commands(text: str) -> list[list[str]]:
    """Every `simulator ...` command in the workflow's run steps (folded lines joined)."""
    out = []
    for step in _load(text)["jobs"]["scenarios"]["steps"]:
        run = " ".join(step.get("run", "").split())
        for part in re.split(r"\|\||&&|;", run):
            words = shlex.split(part)
            if words and words[0] == "simulator":
                out.append(words[1:])
    return out


def test_every_simulator_command_in_the_workflow_parses() -> None:
    parser = build_parser()
    registered = _subcommands(parser)
    commands = _commands(WORKFLOW.read_text())
    assert {c[0] for c in commands} >= {"validate", "run", "report", "gate"}
    for words in commands:
        if words[0] not in registered:
            assert words[0] == "gate"  # added by issue 12's gate command; parsed once both are merged
            continue
        args = parser.parse_args(words)
        assert callable(args.handler)


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices) if actions else set()


def test_the_exit_code_table_names_every_command() -> None:
    readme = (ROOT / "docs" / "commands.md").read_text()
    table = readme.split("### Exit codes, per command", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"^\| `simulator ([\w-]+)", table, re.M))
    missing = _subcommands(build_parser()) - named
    assert not missing, f"add to the exit-code table in docs/commands.md: {sorted(missing)}"
    assert "| `pytest --simulator-suite" in table and "| `simulator gate" in table
