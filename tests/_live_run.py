"""A `simulator run` in a child process that takes several seconds (LLM user on the fake server), for tests
that act on a run while it is being written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_suite(folder: Path, bot_module: str, base_url: str, scenarios: int, runs: int) -> Path:
    """Scenarios of three turns each, the scripted bot, the LLM user at `base_url`, two in flight."""
    folder.mkdir()
    (folder / "many.yaml").write_text(
        "".join(
            f"- {{id: s{n}, persona: p{n}, goal: ask for help, max_turns: 3, expected: {{triage_level: gp}}}}\n"
            for n in range(scenarios)
        )
    )
    suite = folder / "suite.yaml"
    suite.write_text(
        f"scenarios: {{paths: [many.yaml]}}\nbot: {{type: python, factory: '{bot_module}:make'}}\n"
        f"user: {{model: 'openai:fake-user'}}\nproviders: {{openai: {{base_url: '{base_url}'}}}}\n"
        f"runs: {runs}\nconcurrency: 2\n"
    )
    return suite


def child_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a child `simulator`: this checkout first, then the test's bot module."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}


def start_run(suite: Path, out: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "simulator", "run", str(suite), "--out", str(out), "--no-progress"]
    return subprocess.Popen(command, cwd=tmp_path, env=child_env(tmp_path), stdout=subprocess.DEVNULL)


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0
