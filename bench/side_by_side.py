"""Side by side on the fake LLM server: this engine, LangWatch Scenario, DeepEval's conversation simulator and
promptfoo's simulated user each hold N conversations of T turns with the same bot (one chat call per turn),
judged on C criteria, every call answered after the same fixed latency.

    python bench/side_by_side.py --conversations 100 --turns 4 --criteria 3 --concurrency 100 \
        --python /work/peers-venv/bin/python --promptfoo /work/peers-node/node_modules/.bin/promptfoo

Each framework runs in its own child process against a fake server of its own (so its calls are counted:
the server's "served N requests"), with a dummy key and no network beyond loopback, and gets: process wall,
user+sys CPU, CPU per call (start-up included) and peak RSS of that child; then each peer's ratio to this
engine beside the issue's goals (process wall: >= 60x LangWatch Scenario, >= 30x DeepEval, >= 5x promptfoo).
What each does per conversation: this engine's simulated user, bot, C judge calls and its fidelity audit of
the user; LangWatch Scenario its user, bot and judge agent (the C criteria in one judge); DeepEval's
simulator its user and bot only (it judges nothing here, so its figures are for less work); promptfoo its
simulated user (its "remote generation" task API, served on loopback by a small adapter that asks the same
fake server, so each user turn is one 100 ms call there too), bot and C `llm-rubric` assertions.
A framework that is not installed is reported as skipped with the reason; so is one whose run fails.
Install the peers apart from the project: `python3 -m venv /work/peers-venv && /work/peers-venv/bin/pip
install langwatch-scenario deepeval`, `npm install promptfoo` (in any folder). Nothing is asserted; the figures
go in bench/README.md.
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from run_bench import _run_engine, _start_server, _write_suite, reference_cpu_s  # noqa: E402

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
BASE, N, TURNS, CONCURRENCY, CRITERIA = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
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
                scenario.JudgeAgent(
                    model="openai/fake", criteria=[f"The bot follows rule {c}." for c in range(CRITERIA)], **options
                ),
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


# promptfoo's simulated user asks its "remote generation" task API for each user turn; this adapter answers
# that API on loopback by asking the fake server (model fake-user), so a user turn is one call there too.
_TASK_ADAPTER = """
import sys
import aiohttp
from aiohttp import web
BASE = sys.argv[1]
async def task(request):
    body = await request.json()
    messages = [{"role": "system", "content": body.get("instructions") or ""}, *body.get("history", [])]
    async with request.app["client"].post(
        BASE + "/v1/chat/completions", headers={"authorization": "Bearer dummy-key"},
        json={"model": "fake-user", "messages": messages, "max_tokens": 200},
    ) as answer:
        reply = await answer.json()
    usage = reply.get("usage") or {}
    return web.json_response({"result": reply["choices"][0]["message"]["content"], "tokenUsage": {
        "prompt": usage.get("prompt_tokens", 0), "completion": usage.get("completion_tokens", 0),
        "total": usage.get("total_tokens", 0)}})
async def client(app):
    app["client"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    yield
    await app["client"].close()
app = web.Application()
app.cleanup_ctx.append(client)
app.router.add_post("/api/v1/task", task)
async def main():
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", flush=True)
    import asyncio
    await asyncio.Event().wait()
import asyncio
asyncio.run(main())
"""


def _promptfoo_config(folder: Path, base: str, args: argparse.Namespace) -> Path:
    """The eval: the bot as promptfoo's OpenAI provider, its simulated user for `turns` turns, and the
    criteria as `llm-rubric` assertions graded by the fake server (JSON, which promptfoo accepts)."""
    openai = {"apiBaseUrl": base + "/v1", "apiKey": "dummy-key", "max_tokens": 200}
    config = {
        "description": "side by side",
        "prompts": ["You are a helpful triage assistant. Ask one question at a time."],
        "providers": [{"id": "openai:chat:fake-bot", "config": openai}],
        "defaultTest": {
            "provider": {"id": "promptfoo:simulated-user", "config": {"maxTurns": args.turns}},
            "options": {"provider": {"id": "openai:chat:fake", "config": openai}},
            "assert": [
                {"type": "llm-rubric", "value": f"The bot follows rule number {c} of the service."}
                for c in range(args.criteria)
            ],
        },
        "tests": [
            {"vars": {"instructions": f"You are Person {i}; find out what to do about symptom number {i}."}}
            for i in range(args.conversations)
        ],
    }
    path = folder / "promptfooconfig.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _promptfoo(binary: str, url: str, args: argparse.Namespace) -> dict[str, object]:
    """promptfoo's eval of the same conversations, its task API answered by the adapter on loopback.
    `binary`: the command that starts promptfoo (shell words: `NODE .../promptfoo/dist/src/entrypoint.js`
    when the system's Node.js is older than the 22 promptfoo needs)."""
    words = shlex.split(binary)
    if not words or not Path(words[-1]).exists():
        return {"skipped": f"not installed: {binary} does not exist (npm install promptfoo)"}
    adapter = subprocess.Popen([sys.executable, "-c", _TASK_ADAPTER, url], stdout=subprocess.PIPE, text=True)
    try:
        assert adapter.stdout is not None
        task_url = adapter.stdout.readline().strip() + "/api/v1/task"
        with tempfile.TemporaryDirectory(prefix="promptfoo-sbs-") as tmp:
            config = _promptfoo_config(Path(tmp), url, args)
            command = [*words, "eval", "-c", str(config), "--no-cache", "--no-write", "--no-table",
                       "--no-progress-bar", "-j", str(args.concurrency), "-o", str(Path(tmp) / "out.json")]  # fmt: skip
            env = {
                "PROMPTFOO_REMOTE_GENERATION_URL": task_url,
                "PROMPTFOO_CONFIG_DIR": tmp,
                "PROMPTFOO_DISABLE_TELEMETRY": "1",
                "PROMPTFOO_DISABLE_UPDATE": "1",
                "PROMPTFOO_DISABLE_SHARING": "1",
                "PROMPTFOO_SELF_HOSTED": "1",
            }
            # Exit 100: the eval finished with failed assertions (the fake grader's answer is no verdict).
            return _measured(command, env, cwd=tmp, ok=(0, 100))
    finally:
        adapter.terminate()
        adapter.wait()


def _measured(
    command: list[str],
    extra_env: dict[str, str] | None = None,
    cwd: str | None = None,
    ok: tuple[int, ...] = (0,),
) -> dict[str, object]:
    """Run one framework; wall, user+sys CPU and peak RSS of its process, or why it was skipped (`ok`: the
    exit codes of a run that finished)."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "dummy-key",
        "SCENARIO_HEADLESS": "true",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        **(extra_env or {}),
    }
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        said, errors = out.read().decode().strip(), err.read().decode().strip()
    if child.returncode == 3:
        return {"skipped": said}
    if child.returncode not in ok:
        return {"skipped": f"failed (exit {child.returncode}): {(errors or said).splitlines()[-3:]}"}
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "said": said.splitlines()[-1:],
    }


# The goals: how many times this engine's process wall each peer's is.
GOALS = {"langwatch-scenario": 60.0, "deepeval": 30.0, "promptfoo": 5.0}


def _served(server: subprocess.Popen[str]) -> int | None:
    """Stop a fake server started with its stderr kept; the requests it served."""
    server.terminate()
    _, said = server.communicate(timeout=30)
    found = re.search(r"served (\d+) requests", said or "")
    return int(found.group(1)) if found else None


def _framework(name: str, args: argparse.Namespace, shape: argparse.Namespace) -> dict[str, object]:
    """One framework against a fake server of its own, with the calls that server served."""
    server, url = _start_server(shape, capture_stderr=True)
    try:
        if name == "simulator":
            with tempfile.TemporaryDirectory(prefix="simulator-sbs-") as tmp:
                suite = _write_suite(Path(tmp), shape, url)
                wall, cpu, rss_kib, code, _ = _run_engine(suite, Path(tmp) / "run", None)
            result: dict[str, object] = (
                {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss_kib / 1024}
                if code == 0
                else {"skipped": f"failed (exit {code})"}
            )
        elif name == "promptfoo":
            result = _promptfoo(args.promptfoo, url, args)
        else:
            code_text = textwrap.dedent(LANGWATCH if name == "langwatch-scenario" else DEEPEVAL)
            child_args = [
                url,
                str(args.conversations),
                str(args.turns),
                str(args.concurrency),
                str(args.criteria),
            ]
            result = _measured([args.python, "-c", code_text, *child_args])
    finally:
        result_calls = _served(server)
    result["calls"] = result_calls
    return result


def _line(name: str, result: dict[str, object], ours: dict[str, object]) -> str:
    if "skipped" in result:
        return f"{name:20s} skipped: {result['skipped']}"
    wall, cpu, rss, calls = (float(result[k]) for k in ("wall_s", "cpu_s", "peak_rss_mb", "calls"))
    text = (
        f"{name:20s} process wall {wall:.2f} s, CPU {cpu:.2f} s, {calls:.0f} calls, "
        f"{1000 * cpu / calls:.2f} ms CPU per call, peak RSS {rss:.0f} MB"
    )
    if name == "simulator" or "skipped" in ours:
        return text
    o_wall, o_cpu, o_rss, o_calls = (float(ours[k]) for k in ("wall_s", "cpu_s", "peak_rss_mb", "calls"))
    ratio = wall / o_wall
    goal = GOALS[name]
    return (
        f"{text}\n{'':20s} ratios to simulator: process wall {ratio:.1f}x (goal >= {goal:g}x: "
        f"{'met' if ratio >= goal else 'NOT met'}), CPU per call {(cpu / calls) / (o_cpu / o_calls):.1f}x, "
        f"memory {rss / o_rss:.1f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--criteria", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--python", default=sys.executable, help="interpreter with the Python peers")
    parser.add_argument(
        "--promptfoo",
        default="/work/peers-node/node_modules/.bin/promptfoo",
        help="the command that starts promptfoo (npm install promptfoo; it needs Node.js 22 or newer)",
    )
    parser.add_argument("--only", action="append", choices=["simulator", *GOALS], help="run only these")
    args = parser.parse_args(argv)
    print(
        f"machine: {os.cpu_count()} cores, reference loop {reference_cpu_s():.3f} s CPU, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    shape = argparse.Namespace(
        scenarios=args.conversations, repeats=1, turns=args.turns, criteria=args.criteria,
        concurrency=args.concurrency, connections=args.concurrency, provider="openai", rpm=None,
        pace_from_headers=True, latency_ms=args.latency_ms, server_rpm=None, server_burst=None,
        error_429=0.0, retry_after=1.0,
    )  # fmt: skip
    names = args.only or ["simulator", *GOALS]
    results = {name: _framework(name, args, shape) for name in names}
    print(
        f"{args.conversations} conversations x {args.turns} turns, {args.criteria} criteria, "
        f"{args.latency_ms:g} ms per call, concurrency {args.concurrency}; interpreter start-up included"
    )
    ours = results.get("simulator", {"skipped": "not run"})
    for name, result in results.items():
        print(_line(name, result, ours))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
