"""What a tool call through the environment costs (docs/environment.md), run by hand:

    python bench/environment_bench.py [--calls 2000]

Measures, on this machine: a function tool called from Python (`env.call`: argument check against the
JSON schema, the thread-pool hop that makes timeouts possible, the record), a canned tool, and a call from
an http bot through the engine's loopback endpoint (`POST {env_url}/tools/{name}`, httpx client in the
same process). Prints calls per second and the median and 95th percentile per call. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

import httpx

from simulator.bots.env_server import EnvironmentServer
from simulator.bots.environment import make_environment
from simulator.config.environment import EnvironmentSpec

SPEC = EnvironmentSpec.model_validate(
    {
        "state": {"escalations": []},
        "tools": {
            "escalate": {
                "parameters": {
                    "type": "object",
                    "properties": {"patient_id": {"type": "string"}, "reason": {"type": "string"}},
                    "required": ["patient_id", "reason"],
                },
                "function": "examples.clinic_env.tools:escalate_to_nurse",
            },
            "find": {"responses": [{"when": {"need": "gp"}, "result": {"name": "GP"}}]},
        },
    }
)
ARGUMENTS = {"patient_id": "P1", "reason": "x"}


def _figures(label: str, times: list[float]) -> str:
    times = sorted(times)
    total = sum(times)
    p95 = times[int(len(times) * 0.95) - 1]
    return (
        f"{label:<28} {len(times) / total:8.0f} calls/s   median {statistics.median(times) * 1e6:7.0f} µs   "
        f"p95 {p95 * 1e6:7.0f} µs"
    )


def bench_python(calls: int, tool: str, arguments: dict[str, Any]) -> list[float]:
    env = make_environment(SPEC, {})
    assert env is not None
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        part = env.call(tool, arguments)
        times.append(time.perf_counter() - start)
        assert part.error is None, part.error
    return times


async def bench_http(calls: int) -> list[float]:
    server = EnvironmentServer()
    url = await server.start()
    env = make_environment(SPEC, {})
    assert env is not None
    server.register("c1", env)
    times = []
    async with httpx.AsyncClient() as client:
        for _ in range(calls):
            start = time.perf_counter()
            answer = await client.post(
                f"{url}/tools/escalate",
                json={"conversation_id": "c1", "arguments": {"patient_id": "P1", "reason": "x"}},
            )
            times.append(time.perf_counter() - start)
            assert "result" in answer.json(), answer.text
    await server.aclose()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}; {args.calls} calls each")
    print(_figures("function tool (env.call)", bench_python(args.calls, "escalate", ARGUMENTS)))
    print(_figures("canned tool (env.call)", bench_python(args.calls, "find", {"need": "gp"})))
    print(_figures("http bot via env_url", asyncio.run(bench_http(args.calls))))


if __name__ == "__main__":
    main()
