"""CPU per span of `simulator collect` closing conversations, in process: no HTTP, no client, no server.

Makes `--conversations` conversations of `--turns` GenAI chat spans each (the real OpenTelemetry SDK, each
span repeating the history, encoded as gzip'd protobuf requests of `--batch` spans: collect_bench.py's
spans), feeds them to a `Collector` as the receiver does (`decode_export`, `accept_decoded`), then closes
them all with one `tick` (read back from the spool, stitched, the record built, signals computed, the
record and signals written). Prints the CPU of accepting and of closing, each in ms a span; `--profile`
prints cProfile's top functions of the closing (by cumulative time). It measures the checkout it lies in;
run it in each checkout to compare two. Nothing is asserted.

    python bench/collect_close_bench.py --conversations 1000 --turns 4
    python bench/collect_close_bench.py --conversations 200 --turns 16 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _round(bodies: list[bytes], spans: int, profile: bool) -> dict[str, float]:
    """One collector fed every request, then closed: (accept, close) CPU in ms a span."""
    from simulator.collect.decode import PROTOBUF, decode_export
    from simulator.collect.service import CollectOptions, Collector

    out = Path(tempfile.mkdtemp(prefix="collect-close-")) / "live"
    collector = Collector(CollectOptions(out=out, fsync=False, rate=1e9, burst=1e9, idle_s=1e9))
    collector.start()
    started = time.process_time()
    for body in bodies:
        decoded = decode_export(body, PROTOBUF, "gzip", "traces", 64 * 1024 * 1024)
        collector.accept_decoded(decoded, now=0.0)
    accepted = time.process_time() - started
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started = time.process_time()
    closed = collector.tick(now=0.0, everything=True)
    closing = time.process_time() - started
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    collector.stop()
    if closed != collector.counts["conversations"] or collector.counts["spans"] != spans:
        raise SystemExit(f"expected every conversation written: {dict(collector.counts)}")
    return {"accept_ms_per_span": accepted * 1000 / spans, "close_ms_per_span": closing * 1000 / spans}


def main() -> int:
    from collect_bench import _requests

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=4, help="spans a conversation (one LLM call a turn)")
    parser.add_argument("--batch", type=int, default=64, help="spans a request")
    parser.add_argument("--runs", type=int, default=3, help="rounds, each a fresh collector")
    parser.add_argument("--profile", action="store_true", help="cProfile one round's closing (stderr)")
    args = parser.parse_args()
    bodies, spans = _requests(args.conversations, args.turns, args.batch)
    rounds = [_round(bodies, spans, args.profile and n == 0) for n in range(args.runs)]
    figures: dict[str, Any] = {
        "conversations": args.conversations,
        "spans": spans,
        "turns": args.turns,
        "batch": args.batch,
    }
    for name in ("accept_ms_per_span", "close_ms_per_span"):
        values = [r[name] for r in rounds]
        figures[name] = round(statistics.median(values), 4)
        figures[name.replace("_ms", "_range_ms")] = [round(min(values), 4), round(max(values), 4)]
    figures["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
