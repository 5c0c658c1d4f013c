"""Bench: a matrix of K prompt variants in one session (one pool, one hub) against the same K cells run one
after another as ordinary runs, both through the fake LLM server with a fixed latency.

    python bench/matrix_bench.py --cells 4 --scenarios 25 --repeats 4 --turns 6 \
        --criteria 2 --latency-ms 50 --concurrency 50 --connections 50

Prints each wall time, the calls made, and the lower bound (calls x latency / connections: the provider
limit both share). Nothing is asserted: the figures go in the report with the command that produced them.
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_bench import _run_engine, _start_server, _write_suite


def _calls(folder: Path) -> int:
    """LLM calls recorded in a run folder: turns with usage plus LLM verdicts (the bench's conversations end
    at max_turns, so no call sits outside a turn; cache off, no retries)."""
    calls = 0
    for line in (folder / "conversations.jsonl").read_text().splitlines():
        record = json.loads(line)
        calls += sum(1 for turn in record["turns"] if turn.get("usage"))
    calls += sum(1 for line in (folder / "verdicts.jsonl").read_text().splitlines() if '"kind":"llm"' in line)
    return calls


def _variants(suite: Path, cells: int) -> list[str]:
    """Add a matrix of `cells` system prompts to the bench suite; return the cell ids."""
    ids = [f"prompt{i}" for i in range(cells)]
    matrix = "\n".join(
        f'    - {{id: {cell}, bot: {{system_prompt: "You are triage assistant number {i}. Ask one question."}}}}'
        for i, cell in enumerate(ids)
    )
    text = suite.read_text()
    (suite.parent / "matrix").mkdir()
    matrix_suite = suite.parent / "matrix" / "suite.yaml"
    body = text.replace("paths: [scenarios]", "paths: [../scenarios]").replace("[judges]", "[../judges]")
    matrix_suite.write_text(body + f"matrix:\n  bots:\n{matrix}\n")
    return ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=4)
    parser.add_argument("--scenarios", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--criteria", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args(argv)
    # The rest of run_bench's shape: one OpenAI-format provider, no rate limit, no pacing from headers.
    args.provider, args.rpm, args.pace_from_headers = "openai", None, False
    server, url = _start_server(args)
    try:
        with tempfile.TemporaryDirectory(prefix="matrix-bench-") as tmp:
            work = Path(tmp)
            suite = _write_suite(work, args, url)
            cells = _variants(suite, args.cells)
            matrix_wall, _, matrix_rss, code, _ = _run_engine(
                work / "matrix" / "suite.yaml", work / "m", None
            )
            assert code == 0, "the matrix run failed"
            calls = sum(_calls(work / "m" / cell) for cell in cells)
            separate = 0.0
            for index in range(args.cells):
                wall, _, _, code, _ = _run_engine(suite, work / f"run{index}", None)
                assert code == 0, "a separate run failed"
                separate += wall
    finally:
        server.terminate()
        server.wait()
    bound = calls * args.latency_ms / 1000 / args.connections
    conversations = args.cells * args.scenarios * args.repeats
    print(
        f"shape          {args.cells} cells x {args.scenarios} scenarios x {args.repeats} repeats = {conversations} conversations"
    )
    print(
        f"               {args.turns} turns, {args.criteria} criteria, {args.latency_ms:g} ms latency, concurrency {args.concurrency}, {args.connections} connections"
    )
    print(f"calls          {calls} ({calls / conversations:.1f} per conversation)")
    print(f"matrix         {matrix_wall:.2f} s (one session, one hub; peak RSS {matrix_rss // 1024} MB)")
    print(f"separate runs  {separate:.2f} s ({args.cells} ordinary runs one after another)")
    print(
        f"lower bound    {bound:.2f} s (calls x latency / connections); matrix at {matrix_wall / bound:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
