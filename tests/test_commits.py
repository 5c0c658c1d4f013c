"""The manifest's `git_commit` is the simulator's own commit, as docs/safety-case.md says; the suite's
checkout is recorded apart (`suite_git_commit`), and a simulator installed as a package records none."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from simulator.analysis.rundata import load_run
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.record.folder import git_commit, simulator_commit
from tests.test_report_support import write_suite

ROOT = Path(__file__).resolve().parent.parent


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _repo(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _git(folder, "init", "-q")
    _git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "c")
    return folder


def _run(suite_dir: Path, out: Path) -> dict[str, str | None]:
    suite_dir.mkdir(parents=True, exist_ok=True)
    suite = load_suite(write_suite(suite_dir, runs=1))
    found = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    asyncio.run(run_suite(suite, found, RunOptions(out=out, progress=False)))
    manifest = load_run(out).manifest
    return {"git_commit": manifest.git_commit, "suite_git_commit": manifest.suite_git_commit}


def test_a_suite_outside_git_still_records_the_simulators_commit(tmp_path: Path) -> None:
    assert _run(tmp_path / "suite", tmp_path / "run") == {
        "git_commit": simulator_commit(),
        "suite_git_commit": None,
    }
    if (ROOT / ".git").exists():  # this checkout: its commit, not None
        assert simulator_commit() == git_commit(ROOT) is not None


def test_a_suite_in_its_own_repository_is_recorded_apart(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "project")
    found = _run(repo / "suite", tmp_path / "run")
    assert found["suite_git_commit"] == _git(repo, "rev-parse", "HEAD")
    assert found["git_commit"] == simulator_commit() != found["suite_git_commit"]


def test_a_simulator_installed_inside_another_checkout_records_no_commit(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "project")
    package = repo / ".venv" / "site-packages" / "simulator"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    assert simulator_commit(package) is None  # the project's commit is not the simulator's
    _git(repo, "add", "-f", str(package / "__init__.py"))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "vendored")
    assert simulator_commit(package) == _git(repo, "rev-parse", "HEAD")
