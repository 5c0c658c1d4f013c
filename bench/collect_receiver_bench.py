"""CPU a request of `simulator collect`'s receiver app alone: no HTTP server, no parser, no socket.

Drives the ASGI app straight (the scope, receive and send uvicorn would hand it) with `POST /v1/traces` and an
empty OTLP JSON body, through the host check, routing, the rate limiter, the body read, the decode and the
answer; the spool is not synced (nothing to write). So the figure is the framework's and the receiver's own
per-request cost, without the end-to-end bench's noise from the server, the client and closing
conversations. It measures the checkout it lies in: copy it into another checkout's bench/ to compare two
receivers. Nothing is asserted.

    python bench/collect_receiver_bench.py --requests 20000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BODY = b'{"resourceSpans": []}'
SCOPE = {
    "type": "http",
    "asgi": {"version": "3.0"},
    "http_version": "1.1",
    "method": "POST",
    "scheme": "http",
    "path": "/v1/traces",
    "raw_path": b"/v1/traces",
    "root_path": "",
    "query_string": b"",
    "headers": [
        (b"host", b"127.0.0.1:4318"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(BODY)).encode()),
    ],
    "client": ("127.0.0.1", 5555),
    "server": ("127.0.0.1", 4318),
}


def main() -> int:
    from simulator.collect.receiver import create_receiver
    from simulator.collect.service import CollectOptions, Collector

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20000)
    args = parser.parse_args()
    collector = Collector(
        CollectOptions(
            out=Path(tempfile.mkdtemp(prefix="collect-app-")) / "live", fsync=False, rate=1e9, burst=1e9
        )
    )
    collector.start()
    app = create_receiver(collector)
    statuses: dict[int, int] = {}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses[message["status"]] = statuses.get(message["status"], 0) + 1

    async def run(n: int) -> float:
        started = time.process_time()
        for _ in range(n):
            await app({**SCOPE, "state": {}}, receive, send)
        return time.process_time() - started

    asyncio.run(run(2000))  # warm up: imports, first allocations
    statuses.clear()
    spent = asyncio.run(run(args.requests))
    collector.stop()
    print(
        f"{spent / args.requests * 1e6:.1f} us CPU a request ({args.requests} requests, answers {statuses})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
