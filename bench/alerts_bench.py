"""Bench: what one alert check of `simulator collect` costs, reading every rolling folder whole (as it did)
or following each folder from where it grew (collect/trends.py FollowedFolders, as the collector does now).

Writes `--folders` rolling folders of `--conversations` each (signals and, for `--judged` of them, one
verdict), then runs `--ticks` checks; before each, one conversation closes in the newest folder and every
fifth tick one verdict is written (the judging thread). Each check reads the newest `--window`
conversations, as `check_alerts` does. Prints the median and the largest check time of each way, and the
first (cold) check. Nothing is asserted (a bench, not a test).

    python bench/alerts_bench.py --folders 5 --conversations 4000 --ticks 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _write(folder: Path, numbers: range, judged: float) -> None:
    from simulator.collect.folders import SIGNALS
    from simulator.record.folder import RunFolder
    from tests.test_report_support import record, verdict

    run = RunFolder.resume(folder)
    signals, verdicts = [], []
    for number in numbers:
        rec = record(f"c{number}")
        run.append_conversation(rec)
        at = (T0 + timedelta(seconds=number)).isoformat()
        signals.append(json.dumps({"conversation_id": rec.id, "started_at": at, "user": f"u{number % 97}"}))
        if (number * 7919) % 100 < judged * 100:
            verdicts.append(verdict(rec, "c1", "fail" if number % 13 == 0 else "pass"))
    run.append_verdicts(verdicts)
    with (folder / SIGNALS).open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in signals))


def main() -> int:
    from simulator.collect.trends import FollowedFolders, load_observations
    from tests.test_report_support import write_run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", type=int, default=5)
    parser.add_argument("--conversations", type=int, default=4000, help="per folder")
    parser.add_argument("--judged", type=float, default=0.2, help="share of conversations with a verdict")
    parser.add_argument("--window", type=int, default=1000, help="conversations each check reads")
    parser.add_argument("--ticks", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folders = []
        for index in range(args.folders):
            folder = write_run(Path(tmp) / f"live-{index:03d}", [], [])
            start = index * args.conversations
            _write(folder, range(start, start + args.conversations), args.judged)
            folders.append(folder)
        followed = FollowedFolders()
        times: dict[str, list[float]] = {"whole": [], "followed": []}
        next_number = args.folders * args.conversations
        cold = 0.0
        for tick in range(args.ticks + 1):
            _write(folders[-1], range(next_number, next_number + 1), 1.0 if tick % 5 == 0 else 0.0)
            next_number += 1
            for way, reader in (("whole", None), ("followed", followed)):
                began = time.perf_counter()
                seen = load_observations(folders, args.window, reader)
                spent = time.perf_counter() - began
                if reader is not None:
                    reader.forget_unread()
                if tick == 0 and reader is not None:
                    cold = spent
                elif tick:
                    times[way].append(spent)
            assert len(seen) == args.window
        total = args.folders * args.conversations
        print(f"{args.folders} folders x {args.conversations} conversations ({total}), window {args.window}")
        for way, spent in times.items():
            print(
                f"  {way:9} median {1000 * statistics.median(spent):8.1f} ms   max {1000 * max(spent):8.1f} ms"
            )
        print(f"  followed, first (cold) check {1000 * cold:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
