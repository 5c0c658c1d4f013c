"""Bench: one process against the Ray backend, under a provider request budget.

    python bench/scale_bench.py --conversations 200 --turns 4 --latency-ms 50 --rpm 3000 --workers 2

A suite whose `chat` bot calls the fake LLM server (the simulated user is offline, so every provider call
is the bot's) runs twice: in this machine's one process, then on a local Ray with N worker actors. Each
prints its wall time against the rate-limit bound (calls / budget), and the difference between the two
divided by the conversations is the Ray path's overhead per conversation. A third pair of runs without a
budget shows the overhead where nothing else binds. Nothing is asserted: the figures go in
bench/README.md with the command that made them.
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.config.scenario import Scenario  # noqa: E402
from simulator.config.suite import Suite  # noqa: E402
from simulator.engine.ray_backend import RayBackendOptions  # noqa: E402
from simulator.engine.runner import RunOptions, run_suite  # noqa: E402
from simulator.record.folder import RunFolder  # noqa: E402
from simulator.testing import FakeLLMServer  # noqa: E402


def _suite(base_url: str, args: argparse.Namespace, rpm: float | None) -> tuple[Suite, list[Scenario]]:
    provider: dict[str, object] = {"base_url": base_url, "max_connections": 64, "timeout_s": 60}
    if rpm:
        provider["rpm"] = rpm
    suite = Suite.model_validate(
        {
            "name": "scale-bench",
            "bot": {"type": "chat", "model": "openai:fake-bot", "system_prompt": "Ask one question."},
            "user": {"model": "offline"},
            "runs": 1,
            "concurrency": args.concurrency,
            "record_raw": False,
            "providers": {"openai": provider},
        }
    )
    scenarios = [
        Scenario(
            id=f"s{i:04d}",
            persona=f"Person {i}, short messages.",
            goal=f"Ask about problem {i}.",
            facts=[f"It started {i % 5 + 1} days ago."],
            max_turns=args.turns,
        )
        for i in range(args.conversations)
    ]
    return suite, scenarios


def _one(args: argparse.Namespace, base_url: str, rpm: float | None, workers: int | None) -> dict[str, float]:
    suite, scenarios = _suite(base_url, args, rpm)
    out = Path(tempfile.mkdtemp(prefix="scale-bench-")) / "run"
    backend = RayBackendOptions(workers=workers) if workers else None
    started = time.monotonic()
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=out, progress=False, backend=backend)))
    wall = time.monotonic() - started
    calls = RunFolder.open(out).read_manifest().total_calls()["openai"].attempts
    shutil.rmtree(out.parent)
    bound = calls / (rpm / 60) if rpm else 0.0
    return {"wall": wall, "calls": calls, "bound": bound}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rpm", type=float, default=3000.0, help="the run-wide request budget")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)
    import ray

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()}")
    ray.init(
        include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}
    )
    try:
        with FakeLLMServer(latency=args.latency_ms / 1000) as server:
            for rpm in (args.rpm, None):
                local = _one(args, server.openai_base_url, rpm, None)
                remote = _one(args, server.openai_base_url, rpm, args.workers)
                label = f"budget {rpm:g}/min" if rpm else "no budget"
                for name, figures in (("1 process", local), (f"ray x{args.workers}", remote)):
                    ratio = f" = {figures['wall'] / figures['bound']:.3f} x the bound" if rpm else ""
                    print(
                        f"{label:18} {name:10} wall {figures['wall']:7.2f} s, {figures['calls']:.0f} calls, "
                        f"bound {figures['bound']:6.2f} s{ratio}"
                    )
                overhead = (remote["wall"] - local["wall"]) / args.conversations * 1000
                print(
                    f"{label:18} ray overhead {overhead:+.2f} ms per conversation (wall difference / conversations)"
                )
    finally:
        ray.shutdown()
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
