"""Start-up: the CPU of a one-conversation `simulator run` against the fake server, and what it imports.

    python bench/startup_bench.py --provider openai --runs 5 [--tree /path/to/another/checkout]

A one-conversation run makes a handful of calls (0.5 ms of CPU each on the bench), so its CPU (user + sys of
the child process) is the start-up: interpreter, imports, config, the run's files, exit. `--tree` measures
another checkout of the project the same way (the before of a before/after; runs alternate between the
trees so that the machine's load falls on both alike). It also runs the same command under
`python -X importtime` once and prints the total import time, the heaviest top-level imports, and whether
`openai`, `anthropic`, `pydantic` models of the SDKs or `sqlite3` were imported. Nothing is asserted.

CPU seconds of a half-second process swing by a third between runs on a shared machine. `--instructions`
also counts the instructions of one run of each tree under valgrind's callgrind (about a minute a tree):
the same count whatever else the machine is doing, so a change of one percent shows (apt's valgrind).

The first run of a checkout (or of an install) keeps the text its dataclasses and annotations compiled beside
its bytecode (simulator/compiled.py), as Python keeps `.pyc` files; every later run loads it. The bench makes
that first run, untimed, before measuring (`--cold` deletes the kept texts instead: a first run, measured).
The measured runs write nothing (PYTHONDONTWRITEBYTECODE=1).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import PYTHON, ROOT, _compile_bytecode, _start_server, _write_suite, reference_cpu_s

GOAL_S = 0.4  # issue 47: start-up CPU of a one-conversation run against the fake server


def _command(suite: Path, out: Path) -> list[str]:
    return ["-m", "simulator", "run", str(suite), "--out", str(out), "--no-progress"]


def _env(tree: Path) -> dict[str, str]:
    return {
        **os.environ, "PYTHONPATH": str(tree), "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k",
        "PYTHONDONTWRITEBYTECODE": "1",
    }  # fmt: skip


def _first_run(tree: Path, suite: Path, out: Path, *, cold: bool) -> None:
    """The first run of a checkout, as a user's: it writes the compiled texts' file beside the bytecode
    (`cold`: delete that file instead, so that every measured run is a first run)."""
    kept = list((tree / "simulator" / "__pycache__").glob("compiled_texts.*.marshal"))
    if cold:
        for path in kept:
            path.unlink()
        return
    if not (tree / "simulator" / "compiled.py").exists():
        return  # a checkout from before the compiled texts were kept: nothing to write
    env = _env(tree)
    env.pop("PYTHONDONTWRITEBYTECODE")
    subprocess.run(
        [PYTHON, *_command(suite, out)], cwd=suite.parent, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip


def _cpu(tree: Path, suite: Path, out: Path) -> float:
    """User + sys seconds of one run, as a user starts it."""
    child = subprocess.Popen(
        [PYTHON, *_command(suite, out)], cwd=suite.parent, env=_env(tree),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the run failed in {tree}")
    return usage.ru_utime + usage.ru_stime


def _imports(tree: Path, suite: Path, out: Path) -> str:
    """The `-X importtime` summary of one run."""
    done = subprocess.run(
        [PYTHON, "-X", "importtime", *_command(suite, out)],
        cwd=suite.parent, env=_env(tree), capture_output=True, text=True, check=False,
    )  # fmt: skip
    rows = re.findall(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", done.stderr)
    top = sorted(((int(c), name) for _, c, indent, name in rows if len(indent) == 1), reverse=True)
    names = {name for *_, name in rows}
    total = sum(c for c, _ in top)
    sdk_types = sum(1 for n in names if re.match(r"(openai|anthropic)\.types\.", n))
    flags = ", ".join(f"{m} {'yes' if m in names else 'no'}" for m in ("openai", "anthropic", "sqlite3"))
    heavy = ", ".join(f"{n} {c / 1e3:.0f} ms" for c, n in top[:6])
    return (
        f"imports {total / 1e6:.2f} s (importtime, wall), {len(names)} modules, SDK type modules {sdk_types}; "
        f"{flags}\n    heaviest: {heavy}"
    )


def _instructions(tree: Path, suite: Path, out: Path) -> str:
    """The instructions one run executes, counted by callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", PYTHON, *_command(suite, out)],
        cwd=suite.parent, env=_env(tree), capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    return (
        f"{int(found.group(1)) / 1e9:.3f} G instructions (callgrind)" if found else "callgrind gave no count"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--scenarios", type=int, default=1, help="a bigger run: its whole CPU, not start-up")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure too")
    parser.add_argument("--cold", action="store_true", help="measure first runs (no compiled texts kept)")
    args = parser.parse_args()
    shape = argparse.Namespace(
        scenarios=args.scenarios, repeats=args.repeats, turns=2, criteria=1, provider=args.provider, rpm=None, pace_from_headers=True,
        concurrency=100, connections=100, latency_ms=1.0,
    )  # fmt: skip
    trees = [ROOT, *(Path(t).resolve() for t in args.tree)]
    _compile_bytecode(trees)
    server, url = _start_server(shape)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            suite = _write_suite(Path(tmp), shape, url)
            print(
                f"cores {os.cpu_count()}, reference loop {reference_cpu_s():.3f} s CPU, load average "
                f"{os.getloadavg()[0]:.2f} at start"
            )
            for tree in trees:
                _first_run(tree, suite, Path(tmp) / f"first-{time.monotonic_ns()}", cold=args.cold)
            cpu: dict[Path, list[float]] = {tree: [] for tree in trees}
            for _ in range(args.runs):
                for tree in trees:
                    cpu[tree].append(_cpu(tree, suite, Path(tmp) / f"out-{time.monotonic_ns()}"))
            for tree in trees:
                values = cpu[tree]
                one = args.scenarios * args.repeats == 1
                goal = (
                    f"; goal <= {GOAL_S} s: {'met' if statistics.median(values) <= GOAL_S else 'NOT met'}"
                    if one
                    else ""
                )
                print(
                    f"{tree}: {'start-up' if one else 'run'} CPU {statistics.median(values):.3f} s "
                    f"({min(values):.3f}-{max(values):.3f}, {len(values)} runs, {args.provider}){goal}"
                )
                print("    " + _imports(tree, suite, Path(tmp) / f"imp-{time.monotonic_ns()}"))
                if args.instructions:
                    print("    " + _instructions(tree, suite, Path(tmp) / f"ins-{time.monotonic_ns()}"))
            print(f"load average {os.getloadavg()[0]:.2f} at end")
    finally:
        server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
