"""The fake LLM server for the bench, in its own process: fixed latency, and a call log kept short.

`FakeLLMServer.calls` keeps every request for tests to inspect; a bench of 200,000 calls would hold them
all, so this wrapper trims the list every second (only its length matters to the server's fault draw).
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import asyncio
import contextlib
import signal
import sys

from simulator.testing.fake_llm import FakeLLMServer, LatencyModel


async def _serve(latency_s: float, port: int) -> None:
    server = FakeLLMServer(latency=LatencyModel.fixed(latency_s), port=port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    served = 0
    async with server:
        print(server.base_url, flush=True)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            served += len(server.calls)
            server.calls.clear()
    print(f"served {served} requests", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="fake LLM server for bench/run_bench.py")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(_serve(args.latency_ms / 1000, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
