"""Stored outputs of the shipped suites, so a change that should not alter what users see provably does not.

Each case runs a shipped suite offline into a fresh folder and renders what a user reads (the JSON report,
the terminal report, the safety case, the history); the values that differ between two identical runs
(clock times, latencies, the run's own path and id, hashes of files holding those times) are replaced by
placeholders, and the rest must equal the stored copy byte for byte.

Refresh the stored copies after a deliberate change, then read the diff before committing:

    python -m tests.support.outputs --update
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STORED = ROOT / "tests" / "data" / "outputs"

# JSON keys whose values are clock readings or measured durations: equal runs differ in them.
VOLATILE_KEYS = frozenset(
    {"generated_at", "created_at", "ended_at", "started_at", "at", "latency_s", "median_s", "p95_s",
     "max_s", "min_s", "mean_s", "seconds", "duration_s", "wall_s", "path", "run_id", "evidence_hash", "git_commit",
     "suite_git_commit"}
)  # fmt: skip
_SHA = re.compile(r"(sha256:)?[0-9a-f]{64}")
_SECONDS = re.compile(r"\b\d+(\.\d+)?(s|ms)\b")
_CLOCK = re.compile(r"\b\d\d-\d\d \d\d:\d\d\b")


@dataclass(frozen=True)
class Case:
    """One shipped suite, and the outputs read from its run."""

    name: str
    suite: str
    hazards: str | None = None  # also render the safety case of this hazard log


CASES = (
    Case("demo", "scenarios/triage/suite.yaml", hazards="examples/triage_hazards.yaml"),
    Case("clinic", "examples/clinic_env/suite.yaml"),
    Case("whatsapp", "examples/whatsapp/suite.yaml"),
    Case("redteam", "scenarios/redteam/suite.yaml"),
    Case("relations", "scenarios/triage/relations/suite.yaml"),
)


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "NO_COLOR": "1"}
    env.pop("SIMULATOR_REQUIRE_ALL", None)
    done = subprocess.run(
        [sys.executable, "-m", "simulator", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if check and done.returncode not in (0, 1, 3):  # 1 and 3 are verdicts (a bug found, not demonstrable)
        raise AssertionError(f"simulator {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def _scrub_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE_KEYS else _scrub_json(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_json(v) for v in value]
    if isinstance(value, str):
        return _SHA.sub("<sha256>", value)
    return value


def _scrub_text(text: str, folders: list[Path]) -> str:
    for folder in folders:
        text = text.replace(str(folder), "<RUN>").replace(folder.name, "<RUN>")
    text = text.replace(str(ROOT), "<ROOT>")  # the checkout's own path (suite files are recorded absolute)
    lines = []
    for line in text.splitlines():
        lines.append(_CLOCK.sub("<time>", _SHA.sub("<sha256>", _SECONDS.sub("<s>", line))).rstrip())
    return "\n".join(lines) + "\n"


def _json_file(path: Path, folders: list[Path]) -> str:
    data = _scrub_json(json.loads(path.read_text(encoding="utf-8")))
    return _scrub_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False), folders)


def render(case: Case, work: Path) -> dict[str, str]:
    """The outputs of one case, scrubbed: file name -> text."""
    run = work / f"{case.name}-run"
    _cli("run", case.suite, "--out", str(run))
    out: dict[str, str] = {}
    report_json = work / f"{case.name}.report.json"
    terminal = _cli("report", str(run), "--json", str(report_json))
    out[f"{case.name}.report.json"] = _json_file(report_json, [run])
    out[f"{case.name}.report.txt"] = _scrub_text(terminal.stdout, [run])
    if case.hazards:
        again = work / f"{case.name}-again"
        _cli("run", case.suite, "--out", str(again))
        case_json = work / f"{case.name}.safety.json"
        printed = _cli("safety-case", str(run), "--hazards", case.hazards, "--json", str(case_json))
        out[f"{case.name}.safety.json"] = _json_file(case_json, [run])
        out[f"{case.name}.safety.txt"] = _scrub_text(printed.stdout, [run])
        history_json = work / f"{case.name}.history.json"
        shown = _cli("history", str(run), str(again), "--hazards", case.hazards, "--json", str(history_json))
        out[f"{case.name}.history.json"] = _json_file(history_json, [run, again])
        out[f"{case.name}.history.txt"] = _scrub_text(shown.stdout, [run, again])
    return out


def differences(case: Case, work: Path) -> list[str]:
    """Which stored outputs of `case` differ from a fresh run's (empty: none)."""
    found = []
    for name, text in render(case, work).items():
        stored = STORED / name
        if not stored.is_file():
            found.append(f"{name}: no stored copy (python -m tests.support.outputs --update)")
        elif stored.read_text(encoding="utf-8") != text:
            found.append(f"{name}: differs from {stored.relative_to(ROOT)}")
    return found


def update(pick: Callable[[Case], bool] = lambda case: True) -> None:
    import tempfile

    STORED.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if not pick(case):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in render(case, Path(tmp)).items():
                (STORED / name).write_text(text, encoding="utf-8")
                print(f"wrote {STORED.relative_to(ROOT) / name}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"] and not (len(sys.argv) == 3 and sys.argv[1] == "--update"):
        sys.exit("usage: python -m tests.support.outputs --update [CASE]")
    only = sys.argv[2] if len(sys.argv) == 3 else None
    update(lambda case: only is None or case.name == only)
