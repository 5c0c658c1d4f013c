"""Side by side on one fake LLM server: this engine, LangWatch Scenario and DeepEval's conversation simulator
each hold N conversations of T turns with the same bot (one chat call per turn) and one judge criterion.

    python bench/side_by_side.py --conversations 20 --turns 4 [--python /path/to/other/venv/bin/python]

Each framework runs in its own child process (wall time, user+sys CPU, peak RSS of that child) against the
fake server's base_url with a dummy key; no network beyond loopback. A framework whose package does not
import in `--python` (default: this interpreter) is reported as skipped, with the reason; so is one whose
run fails. Install them with `pip install langwatch-scenario deepeval` (a separate venv is wise: they pin
their own dependencies). Nothing is asserted; the figures go in bench/README.md.
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run_bench import _run_engine, _start_server, _write_suite  # noqa: E402

_BOT = """
import asyncio
from openai import AsyncOpenAI
clients = {}  # one per event loop (LangWatch Scenario runs each scenario in a loop of its own)
async def bot(messages):
    loop = asyncio.get_running_loop()
    client = clients.get(loop) or clients.setdefault(loop, AsyncOpenAI(base_url=BASE + "/v1", api_key="dummy-key"))
    reply = await client.chat.completions.create(model="fake-bot", messages=messages, max_tokens=200)
    return reply.choices[0].message.content or ""
"""


def _script(imports: str, body: str) -> str:
    """A child script: its arguments, the framework's imports (exit 3 when not installed), the bot, `body`."""
    guarded = textwrap.indent(textwrap.dedent(imports).strip(), "    ")
    head = f"""
import asyncio, sys
BASE, N, TURNS, CONCURRENCY = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
try:
{guarded}
except ImportError as exc:
    print(f"not installed: {{exc}}")
    sys.exit(3)
"""
    return head + _BOT + body


LANGWATCH = _script(
    "import scenario",
    """
class Bot(scenario.AgentAdapter):
    async def call(self, input):
        return await bot(input.messages)

async def one(index, slots):
    async with slots:
        options = dict(api_base=BASE + "/v1", api_key="dummy-key")
        return await scenario.run(
            name=f"bench-{index}",
            description=f"Person {index} wants to know what to do about symptom number {index}.",
            agents=[
                Bot(),
                scenario.UserSimulatorAgent(model="openai/fake-user", **options),
                scenario.JudgeAgent(model="openai/fake", criteria=["The bot follows rule 0."], **options),
            ],
            max_turns=TURNS,
        )

async def main():
    slots = asyncio.Semaphore(CONCURRENCY)
    results = await asyncio.gather(*(one(i, slots) for i in range(N)))
    print(f"{len(results)} conversations")

asyncio.run(main())
""",
)

DEEPEVAL = _script(
    """
    from deepeval.dataset import ConversationalGolden
    from deepeval.models import GPTModel
    from deepeval.simulator import ConversationSimulator
    from deepeval.test_case import Turn
    """,
    """
async def callback(input, turns=None, thread_id=None):
    history = [{"role": t.role, "content": t.content} for t in (turns or [])]
    return Turn(role="assistant", content=await bot(history + [{"role": "user", "content": input}]))

model = GPTModel(model="gpt-4.1-mini", base_url=BASE + "/v1", api_key="dummy-key")
simulator = ConversationSimulator(model_callback=callback, simulator_model=model, max_concurrent=CONCURRENCY)
goldens = [
    ConversationalGolden(
        scenario=f"Person {i} wants to know what to do about symptom number {i}.",
        expected_outcome="The bot gives advice.",
        user_description=f"Person {i}, writes short messages.",
    )
    for i in range(N)
]
cases = simulator.simulate(conversational_goldens=goldens, max_user_simulations=TURNS)
print(f"{len(cases)} conversations")
""",
)


def _measured(python: str, code: str, args: list[str]) -> dict[str, object]:
    """Run one framework; wall, user+sys CPU and peak RSS of its process, or why it was skipped."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "dummy-key",
        "SCENARIO_HEADLESS": "true",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    }
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen([python, "-c", code, *args], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        said, errors = out.read().decode().strip(), err.read().decode().strip()
    if child.returncode == 3:
        return {"skipped": said}
    if child.returncode != 0:
        return {"skipped": f"failed (exit {child.returncode}): {errors.splitlines()[-1:]}"}
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "said": said.splitlines()[-1:],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the other frameworks")
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    shape = argparse.Namespace(
        scenarios=args.conversations, repeats=1, turns=args.turns, criteria=1, concurrency=args.concurrency,
        connections=args.concurrency, provider="openai", rpm=None, pace_from_headers=True,
        latency_ms=args.latency_ms, server_rpm=None, server_burst=None, error_429=0.0, retry_after=1.0,
    )  # fmt: skip
    server, url = _start_server(shape)
    results: dict[str, dict[str, object]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="simulator-sbs-") as tmp:
            suite = _write_suite(Path(tmp), shape, url)
            wall, cpu, rss_kib, code, _ = _run_engine(suite, Path(tmp) / "run", None)
            results["simulator"] = (
                {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss_kib / 1024}
                if code == 0
                else {"skipped": f"failed (exit {code})"}
            )
        child_args = [url, str(args.conversations), str(args.turns), str(args.concurrency)]
        results["langwatch-scenario"] = _measured(args.python, textwrap.dedent(LANGWATCH), child_args)
        results["deepeval"] = _measured(args.python, textwrap.dedent(DEEPEVAL), child_args)
    finally:
        server.terminate()
        server.wait()
    print(
        f"{args.conversations} conversations x {args.turns} turns, 1 criterion, {args.latency_ms:g} ms per call"
    )
    for name, result in results.items():
        if "skipped" in result:
            print(f"{name:20s} skipped: {result['skipped']}")
        else:
            print(
                f"{name:20s} wall {result['wall_s']:.2f} s, CPU {result['cpu_s']:.2f} s, "
                f"peak RSS {result['peak_rss_mb']:.0f} MB (interpreter start-up included)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
