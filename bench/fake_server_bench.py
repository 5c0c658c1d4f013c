"""CPU a request of the fake LLM server alone: each wire format, streaming and not.

Starts the bench's fake server (`serve.py`, the one `run_bench.py` runs against, in its own process) and
sends it `--requests` requests of each case (OpenAI, Anthropic; plain and `stream: true`) from the
engine's own HTTP pool (`providers/_httppool.py`, with the headers the engine sends), `--concurrency` at a
time; half of them chat turns, half judge calls (a JSON schema; Anthropic's with a cache breakpoint).
Prints, per case, the server process's user + system CPU in ms a request (read from /proc around the
requests, after a warm-up: start-up excluded) and the requests a second. It measures the checkout it lies
in; copy it into another checkout's bench/ to compare. Nothing is asserted. Linux only (/proc).
`--instructions` runs the server under valgrind's callgrind and prints its instructions a request instead:
the same count whatever else the machine is doing (the kernel's part of each send is not in it).

    python bench/fake_server_bench.py --requests 2000 --runs 3
    python bench/fake_server_bench.py --instructions --requests 300 --runs 1
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run_bench import PYTHON, _start_server  # noqa: E402  (bench/ is on the path now)

from simulator.inflate import ACCEPT_ENCODING  # noqa: E402
from simulator.providers._httppool import HttpPool  # noqa: E402
from simulator.providers._sdkpost import _capped, dumps_json  # noqa: E402
from simulator.providers._wire import wire_spec  # noqa: E402

_SENTENCE = "the patient says the pain started two days ago and gets worse at night after meals"
_WORDS = _SENTENCE.split(" ")
_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail", "not_applicable"]},
        "reason": {"type": "string"},
        "evidence": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["verdict", "reason", "evidence"],
    "additionalProperties": False,
}


def _text(words: int, seed: int) -> str:
    return " ".join(_WORDS[(seed + i) % len(_WORDS)] for i in range(words))


def _history(number: int) -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", _text(30, number + i)) for i in range(6)]


def _openai_body(number: int, stream: bool) -> dict[str, Any]:
    if number % 2 == 0:  # a chat turn
        messages = [{"role": "system", "content": _text(60, number)}]
        messages += [{"role": role, "content": text} for role, text in _history(number)]
        body: dict[str, Any] = {"model": "fake-model", "messages": messages, "max_tokens": 400}
    else:  # a judge call
        messages = [
            {"role": "system", "content": _text(286, 0)},
            {"role": "user", "content": _text(500, number)},
            {"role": "user", "content": _text(60, number % 3)},
        ]
        body = {
            "model": "fake-model",
            "messages": messages,
            "max_tokens": 600,
            "temperature": 0.0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": _SCHEMA}},
        }
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


def _anthropic_body(number: int, stream: bool) -> dict[str, Any]:
    if number % 2 == 0:
        messages: list[dict[str, Any]] = [{"role": r, "content": t} for r, t in _history(number)]
        body: dict[str, Any] = {
            "model": "fake-model", "max_tokens": 400, "messages": messages, "system": _text(60, number),
        }  # fmt: skip
    else:
        blocks = [
            {"type": "text", "text": _text(500, number), "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": _text(60, number % 3)},
        ]
        body = {
            "model": "fake-model",
            "max_tokens": 600,
            "messages": [{"role": "user", "content": blocks}],
            "system": _text(286, 0),
            "temperature": 0.0,
            "output_config": {"format": {"type": "json_schema", "schema": _SCHEMA}},
        }
    if stream:
        body["stream"] = True
    return body


def _server_cpu_s(pid: int) -> float:
    """User + system CPU of process `pid` so far (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Meter:
    """What the server spent between `start()` and `stop()`: its CPU seconds from /proc, and with callgrind
    its instructions (counted from zero at `start`, dumped at `stop`: kernel time is not in them)."""

    def __init__(self, pid: int, callgrind_dir: Path | None) -> None:
        self.pid = pid
        self.callgrind_dir = callgrind_dir
        self._cpu = 0.0

    def _control(self, *options: str) -> None:
        subprocess.run(["callgrind_control", *options, str(self.pid)], capture_output=True, check=True)

    def start(self) -> None:
        if self.callgrind_dir is not None:
            self._control("--zero")
            self._control("--instr=on")
        self._cpu = _server_cpu_s(self.pid)

    def stop(self) -> tuple[float, int | None]:
        cpu = _server_cpu_s(self.pid) - self._cpu
        if self.callgrind_dir is None:
            return cpu, None
        self._control("--instr=off")
        before = set(self.callgrind_dir.iterdir())
        self._control("--dump")
        (dump,) = set(self.callgrind_dir.iterdir()) - before
        found = re.search(r"^totals: (\d+)", dump.read_text(), re.MULTILINE)
        return cpu, int(found.group(1)) if found else None


async def _case(url: str, sdk: str, stream: bool, args: argparse.Namespace, meter: _Meter) -> dict[str, Any]:
    path = "/chat/completions" if sdk == "openai" else "/v1/messages"
    base = url + "/v1" if sdk == "openai" else url
    spec = wire_spec(sdk, api_key="sk-bench", base_url=base, path=path, timeout_s=600)
    if spec is None:
        raise SystemExit(f"the {sdk} SDK's request cannot be built here (is the SDK installed?)")
    pool = HttpPool(
        spec.url,
        {**spec.headers, "Accept-Encoding": ACCEPT_ENCODING},
        limit=args.concurrency,
        keepalive_s=600.0,
        ssl_context=lambda: None,  # type: ignore[arg-type, return-value]  # plain http
        capped=_capped,
    )
    build = _openai_body if sdk == "openai" else _anthropic_body
    bodies = [dumps_json(build(number, stream)) for number in range(args.requests)]
    queue = iter(bodies)
    statuses: dict[int, int] = {}

    async def worker() -> None:
        for body in queue:
            status, _, _ = await pool.post(body)
            statuses[status] = statuses.get(status, 0) + 1

    try:
        await asyncio.gather(*(pool.post(body) for body in bodies[: args.concurrency]))  # warm-up
        meter.start()
        wall = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.perf_counter() - wall
        cpu, instructions = meter.stop()
    finally:
        pool.close()
    return {
        "case": f"{sdk} {'stream' if stream else 'plain'}",
        "server_cpu_ms": 1000 * cpu / args.requests,
        "instructions_k": None if instructions is None else instructions / args.requests / 1000,
        "requests_per_s": args.requests / wall,
        "statuses": statuses,
    }


def _callgrind_server(args: argparse.Namespace, folder: Path) -> tuple[subprocess.Popen[str], str]:
    """`serve.py` under callgrind, counting nothing until asked (start-up is not counted)."""
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={folder}/cg.%p"]
    command += [PYTHON, str(ROOT / "bench" / "serve.py"), "--latency-ms", str(args.latency_ms)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url.startswith("http"):
        server.kill()
        raise SystemExit(
            f"the fake server did not start under callgrind (said {url!r}; is valgrind installed?)"
        )
    return server, url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests of each case (default 2000)")
    parser.add_argument("--concurrency", type=int, default=100, help="requests in flight (default 100)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="the server's wait (default 100)")
    parser.add_argument("--runs", type=int, default=3, help="rounds of the four cases (default 3)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="run the server under valgrind's callgrind and count its instructions a request (slow: "
        "try --requests 300 --runs 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rounds: list[list[dict[str, Any]]] = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="fake-server-bench-") as tmp:
        folder = Path(tmp) if args.instructions else None
        if folder is None:
            server, url = _start_server(args, capture_stderr=True)  # its closing line is not ours to print
        else:
            server, url = _callgrind_server(args, folder)
        meter = _Meter(server.pid, folder)
        try:
            for _ in range(args.runs):
                rounds.append(
                    [
                        asyncio.run(_case(url, sdk, stream, args, meter))
                        for sdk in ("openai", "anthropic")
                        for stream in (False, True)
                    ]
                )
        finally:
            server.terminate()
            server.communicate(timeout=120)
    load = f"{_loads(load_before)} before, {_loads(os.getloadavg())} after"
    cases = [
        {
            "case": results[0]["case"],
            "server_cpu_ms": [r["server_cpu_ms"] for r in results],
            "instructions_k": [r["instructions_k"] for r in results],
            "requests_per_s": [r["requests_per_s"] for r in results],
            "statuses": results[-1]["statuses"],
        }
        for results in zip(*rounds, strict=True)
    ]
    if args.json:
        print(json.dumps({"cases": cases, "load_average": load, "cores": os.cpu_count()}))
        return 0
    print(
        f"{args.requests} requests a case, {args.concurrency} in flight, {args.latency_ms:g} ms latency, "
        f"{args.runs} runs; {os.cpu_count()} cores, load average {load}"
    )
    for case in cases:
        cpu = case["server_cpu_ms"]
        line = (
            f"{case['case']:<17} server CPU {statistics.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f}) ms"
        )
        if args.instructions:  # under callgrind the CPU is callgrind's: the instructions are the figure
            counted = [k for k in case["instructions_k"] if k is not None]
            line = f"{case['case']:<17} {statistics.median(counted):.0f} k instructions"
        print(
            f"{line} a request; {statistics.median(case['requests_per_s']):.0f} requests/s; statuses {case['statuses']}"
        )
    return 0


def _loads(values: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in values)


if __name__ == "__main__":
    sys.exit(main())
