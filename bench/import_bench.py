"""How fast `simulator import` reads OTLP JSON traces, and how much memory it needs.

Writes a synthetic OTLP JSON file (N conversations x T user/bot exchanges; each chat span repeats the
whole history in `gen_ai.input.messages`, as instrumented applications do), then runs
`simulator import` on it in a child process and prints the wall time, spans per second and the child's
peak RSS. Nothing is asserted. Run: `python bench/import_bench.py --conversations 2000 --turns 8`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _value(v: object) -> dict[str, object]:
    return {"stringValue": v if isinstance(v, str) else json.dumps(v)}


def write_traces(path: Path, conversations: int, turns: int) -> int:
    """Write the file one resourceSpans line per conversation; return the number of spans."""
    spans = 0
    with path.open("w", encoding="utf-8") as out:
        for c in range(conversations):
            history: list[dict[str, object]] = []
            rows = []
            for t in range(turns):
                history.append(
                    {
                        "role": "user",
                        "parts": [{"type": "text", "content": f"user {c} says thing {t}, with detail"}],
                    }
                )
                output = [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": f"bot {c} asks question {t}?"}],
                    }
                ]
                attrs = {
                    "gen_ai.conversation.id": f"c{c}",
                    "gen_ai.request.model": "bench-model",
                    "gen_ai.input.messages": history,
                    "gen_ai.output.messages": output,
                }
                start = 1_700_000_000_000_000_000 + (c * turns + t) * 1_000_000_000
                rows.append(
                    {
                        "traceId": f"{c:032x}",
                        "spanId": f"{t + 1:016x}",
                        "startTimeUnixNano": str(start),
                        "endTimeUnixNano": str(start + 500_000_000),
                        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
                    }
                )
                history = history + output
                spans += 1
            out.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": rows}]}]}) + "\n")
    return spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=8, help="user/bot exchanges per conversation")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "traces.jsonl"
        spans = write_traces(source, args.conversations, args.turns)
        size = source.stat().st_size
        env = {**os.environ, "PYTHONPATH": str(root)}
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "simulator", "import", str(source), "--out", str(Path(tmp) / "run")],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(done.stdout.strip() or done.stderr.strip())
    print(f"file               {size / 1e6:.1f} MB, {spans} spans, {args.conversations} conversations")
    print(f"wall time          {wall:.2f} s ({spans / wall:,.0f} spans/s, interpreter start-up included)")
    print(f"peak RSS (child)   {peak_mb:.0f} MB")
    print(f"load average       {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
