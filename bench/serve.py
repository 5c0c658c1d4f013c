"""The fake LLM server for the bench, in its own process: fixed latency, and a call log kept short.

`FakeLLMServer.calls` keeps every request for tests to inspect; a bench of 200,000 calls would hold them
all, so this wrapper trims the list every second (only its length matters to the server's fault draw).
Optional: a provider rate limit (`--rpm`, `--burst`: token bucket, rate-limit headers, 429s beyond it) and
a share of random 429s (`--error-429`).
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import asyncio
import contextlib
import signal
import sys

from simulator.eventloop import frozen_heap, run_async
from simulator.testing.fake_llm import FakeLLMServer, FaultConfig, LatencyModel, ServerBudget


async def _serve(args: argparse.Namespace) -> None:
    budget = None
    if args.rpm:
        budget = ServerBudget(
            args.rpm,
            burst_requests=args.burst,
            send_headers=args.headers,
            retry_after_s=args.budget_retry_after,
        )
    faults = FaultConfig(
        error_429=args.error_429, retry_after_s=args.retry_after, instant_429=args.instant_429
    )
    server = FakeLLMServer(
        latency=LatencyModel.fixed(args.latency_ms / 1000), port=args.port, budget=budget, faults=faults
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    served = 0
    async with server:
        print(server.base_url, flush=True)
        # The engine's collector settings for a run (the start-up heap frozen, the young generation collected
        # every 20,000 allocations): a tenth of this server's CPU went to collections at the defaults.
        with frozen_heap(True):
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=1.0)
                served += len(server.calls)
                server.calls.clear()
    rejected = budget.rejected if budget is not None else 0
    print(f"served {served} requests ({rejected} over the budget)", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="fake LLM server for bench/run_bench.py")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rpm", type=float, default=None, help="provider budget, requests per minute")
    parser.add_argument("--burst", type=float, default=None, help="requests the budget saves up")
    parser.add_argument("--error-429", type=float, default=0.0, help="share of random 429s")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After of the random 429s")
    parser.add_argument("--no-headers", dest="headers", action="store_false", help="no rate-limit headers")
    parser.add_argument("--budget-retry-after", type=float, default=None, help="fixed Retry-After, budget")
    parser.add_argument("--instant-429", action="store_true", help="random 429s answered at once")
    args = parser.parse_args()
    run_async(_serve(args))  # uvloop, as the engine and the fake server's own command line
    return 0


if __name__ == "__main__":
    sys.exit(main())
