"""Count how the hostile-input battery of issue 43 (tests/support/hostile_inputs.py) fares through the real
CLI: each case is a `python -m simulator` child under a 20 s timeout; prints one line per failing case and
the totals by input class. Run by hand from the repository root: `python -m bench.hostile_readers`
(`--tree DIR` runs another checkout's simulator, e.g. main, for a before/after count). Nothing is asserted:
tests/test_hostile_readers.py asserts the same cases in process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tests.support.hostile_inputs import JSONL_OK, build_cases, verdict


def _cli(tree: Path, argv: list[str], timeout: float = 20) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "NO_COLOR": "1", "COLUMNS": "200"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "simulator", *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
            cwd=tree,  # `-m` puts the working folder first on the path: it decides which simulator runs
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", type=Path, default=Path.cwd(), help="the checkout whose simulator runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        source = root / "one.jsonl"
        source.write_text(__import__("json").dumps(JSONL_OK) + "\n")

        def make_run(path: Path) -> None:
            code, err = _cli(args.tree, ["import", str(source), "--out", str(path), "--no-redact"])
            assert code == 0, err

        cases = build_cases(root, make_run)
        failed: Counter[int] = Counter()
        kinds: Counter[str] = Counter()
        for case in cases:
            code, err = _cli(args.tree, case.argv)
            wrong = verdict(case, code, err)
            if wrong:
                failed[case.klass] += 1
                kinds[wrong.split(":")[0]] += 1
                first = err.strip().splitlines()[-1][:160] if err.strip() else ""
                print(f"FAIL [{case.klass}] {case.name}: {wrong} | {first}")
        total = Counter(case.klass for case in cases)
        print(f"\n{len(cases)} cases, {sum(failed.values())} failed")
        for klass in sorted(total):
            print(f"  class {klass}: {failed[klass]} of {total[klass]} failed")
        for kind, count in kinds.most_common():
            print(f"  {kind}: {count}")


if __name__ == "__main__":
    main()
