"""Bench: `simulator report` on a large run (default 8 scenarios x 1,250 repeats = 10,000 conversations).

    python bench/report_bench.py --scenarios 8 --repeats 1250 --turns 6 --criteria 3 [--mode html ...]

Builds the run folder from synthetic, typed records through RunFolder (a few seconds, no model calls):
each conversation has `turns` user/bot exchanges, a triage outcome (some scenarios mixed, one with
errors), an outcome verdict and `criteria` LLM-style verdicts. Then runs `simulator report RUN --quiet
--json OUT` (or, with `--mode`, the terminal report or `--html`) in a child process and prints its wall and
CPU time, peak RSS (the child's max resident set) and, per conversation, CPU and RSS: with `--repeats 12500`
(100,000 conversations) those show whether the report stays flat per conversation.
`--python` picks the interpreter and `--pythonpath` the code under test (default: this checkout), so the
same folder can be timed with another checkout for a before/after. Nothing is asserted: the figures go in
bench/README.md with the command that produced them.
"""

from __future__ import annotations

__all__ = ["build_run", "main"]

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEVELS = ["self_care", "gp", "urgent", "emergency"]


def build_run(path: Path, scenarios: int, repeats: int, turns: int, criteria: int, seed: int = 0) -> Path:
    """Write a complete, judged synthetic run folder at `path` and return it."""
    sys.path.insert(0, str(ROOT))
    from simulator.config.suite import Suite
    from simulator.record.folder import RunFolder
    from simulator.record.manifest import JudgeSet, Manifest, RoleModels, ScenarioEntry
    from simulator.record.models import ConversationRecord, ErrorInfo, Verdict
    from simulator.record.transcript import Turn

    rng = random.Random(seed)
    suite = Suite.model_validate(
        {
            "name": "report-bench",
            "runs": repeats,
            "bot": {"type": "python", "factory": "bench:bot"},
            "outcome": {"key": "triage_level", "levels": LEVELS, "critical": "emergency"},
        }
    )
    ids = [f"bench-{i:03d}" for i in range(scenarios)]
    expected = {sid: LEVELS[i % len(LEVELS)] for i, sid in enumerate(ids)}
    manifest = Manifest(
        run_id=path.name,
        created_at=datetime.now(UTC),
        status="complete",
        suite=suite,
        models=RoleModels(user="offline", bot=suite.bot.describe()),
        scenarios=[ScenarioEntry(id=sid, expected={"triage_level": expected[sid]}) for sid in ids],
        planned=scenarios * repeats,
        judge_sets=[JudgeSet(hash="sha256:bench")],  # the one every verdict below names
    )
    folder = RunFolder.create(path, manifest)
    now = datetime.now(UTC)
    for index, sid in enumerate(ids):
        # Scenario i is right with probability p_i: some always right, some mixed, one that errors.
        right = [1.0, 0.9, 0.5, 0.97][index % 4]
        records, verdicts = [], []
        for repeat in range(repeats):
            cid = f"{sid}#{repeat}"
            errored = index == 1 and rng.random() < 0.05
            level = expected[sid] if rng.random() < right else LEVELS[max(0, LEVELS.index(expected[sid]) - 1)]
            user_turns = [
                Turn(index=2 * t, role="user", messages=[f"message {t} of {sid}"], started_at=now)
                for t in range(turns)
            ]
            bot_turns = [
                Turn(
                    index=2 * t + 1, role="bot", messages=[f"reply {t} ({rng.randrange(3)})"], started_at=now
                )
                for t in range(turns)
            ]
            all_turns = [x for pair in zip(user_turns, bot_turns, strict=True) for x in pair]
            records.append(
                ConversationRecord(
                    id=cid,
                    scenario_id=sid,
                    repeat=repeat,
                    stop_reason="error" if errored else "bot_closed",
                    turns=all_turns[:-1] if errored else all_turns,
                    final_state=None if errored else {"triage_level": level},
                    error=ErrorInfo(source="bot", kind="RuntimeError", message="bench") if errored else None,
                    started_at=now,
                    ended_at=now,
                )
            )
            base = {
                "conversation_id": cid,
                "scenario_id": sid,
                "repeat": repeat,
                "judge_set_hash": "sha256:bench",
            }
            outcome = "error" if errored else ("pass" if level == expected[sid] else "fail")
            verdicts.append(
                Verdict(
                    **base,
                    criterion_id="outcome.triage_level",
                    kind="code",
                    result=outcome,
                    expected=expected[sid],
                    actual=None if errored else level,
                )
            )
            for c in range(criteria):
                result = "error" if errored else ("fail" if rng.random() < 0.03 * (c + 1) else "pass")
                verdicts.append(
                    Verdict(
                        **base,
                        criterion_id=f"criterion-{c}",
                        kind="llm",
                        result=result,
                        judge_model="anthropic:bench",
                    )
                )
        for record in records:
            folder.append_conversation(record)
        folder.append_verdicts(verdicts)
    return path


# What each mode asks `simulator report` for: the JSON file, the terminal report, the HTML file.
MODES = ("json", "terminal", "html")
# Issue 47's goals at 10,000 conversations: seconds (CPU here: the wall moves with the machine's load), and
# for the HTML its peak RSS (MB) and file size (MB).
GOALS: dict[str, tuple[float, float | None, float | None]] = {
    "json": (6.0, None, None),
    "terminal": (6.0, None, None),
    "html": (10.0, 400.0, 10.0),
}


def _goal(mode: str, figures: dict[str, float], conversations: int) -> str:
    """The figures beside the goals (set for 10,000 conversations; other sizes: none)."""
    if conversations != 10_000:
        return ""
    seconds, rss, size = GOALS[mode]
    checks = [f"CPU <= {seconds:g} s: {'met' if figures['cpu_s'] <= seconds else 'NOT met'}"]
    if rss is not None:
        checks.append(f"RSS <= {rss:g} MB: {'met' if figures['peak_rss_mb'] <= rss else 'NOT met'}")
    if size is not None:
        checks.append(f"file <= {size:g} MB: {'met' if figures['file_kb'] / 1024 <= size else 'NOT met'}")
    return "\n              goal " + "; ".join(checks)


def _report_args(run: Path, mode: str) -> tuple[list[str], Path | None]:
    if mode == "terminal":
        return [str(run)], None
    out = run.parent / f"report.{mode}"
    return [str(run), "--quiet", f"--{mode}", str(out)], out


def time_report(run: Path, python: str, pythonpath: str, mode: str = "json") -> dict[str, float]:
    """Run `simulator report` on `run` in a child process: wall and CPU seconds, the child's own peak RSS
    in MB (`wait4`: that child's, not the largest of all children so far), the file's size."""
    args, out = _report_args(run, mode)
    env = {**os.environ, "PYTHONPATH": pythonpath}
    start = time.perf_counter()
    child = subprocess.Popen(
        [python, "-m", "simulator", "report", *args], env=env, cwd=run.parent, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"simulator report exited with {child.returncode}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "file_kb": out.stat().st_size / 1024 if out is not None else 0.0,
        "load_average": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1250)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--criteria", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs `simulator report`")
    parser.add_argument("--pythonpath", default=str(ROOT), help="checkout whose code is timed")
    parser.add_argument("--keep", type=Path, help="build the run here and keep it (default: a temp folder)")
    parser.add_argument(
        "--mode",
        choices=MODES,
        action="append",
        help="what the report writes: json (--quiet --json), terminal, html (--quiet --html); repeat for "
        "several, each in its own child process (default json)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    conversations = args.scenarios * args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp) / "run"
        start = time.perf_counter()
        if not (where / "manifest.json").exists():
            build_run(where, args.scenarios, args.repeats, args.turns, args.criteria)
        figures: dict[str, object] = {"conversations": conversations, "build_s": time.perf_counter() - start}
        for mode in args.mode or ["json"]:
            figures[mode] = time_report(where, args.python, args.pythonpath, mode)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"shape         {args.scenarios} scenarios x {args.repeats} repeats = {conversations} conversations, "
        f"{args.turns} turns, {args.criteria} criteria + the outcome check"
    )
    print(f"build         {figures['build_s']:.1f} s (synthetic records through RunFolder)")
    for mode in args.mode or ["json"]:
        f = figures[mode]
        assert isinstance(f, dict)
        size = f", file {f['file_kb'] / 1024:.1f} MB" if f["file_kb"] else ""
        print(
            f"{mode:<13} {f['wall_s']:.2f} s wall, {f['cpu_s']:.2f} s CPU, peak RSS {f['peak_rss_mb']:.0f} MB{size} "
            f"(child process, start-up included); per conversation {1000 * f['cpu_s'] / conversations:.3f} ms "
            f"CPU, {1024 * f['peak_rss_mb'] / conversations:.1f} KB RSS; load {f['load_average']:.2f}"
            f"{_goal(mode, f, conversations)}"
        )
    print(f"code          {args.pythonpath}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
