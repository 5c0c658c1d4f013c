"""Bench: a synthetic suite (scenarios x repeats, turns, criteria) run by `simulator run` against the fake
LLM server, measured against the critical-path lower bound.

    python bench/run_bench.py --scenarios 125 --repeats 8 --turns 8 --criteria 6 \
        --latency-ms 100 --concurrency 100 --connections 100

Prints wall time, the lower bound and their ratio (efficiency), engine CPU per LLM call, the engine's
peak RSS, calls per conversation, and how long `simulator --help` takes to start. Nothing is asserted:
the figures go in bench/README.md with the command that produced them.
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import compileall
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def _write_suite(folder: Path, args: argparse.Namespace, base_url: str) -> Path:
    """Scenarios, criteria and a suite whose user, bot and judges all call the fake server."""
    (folder / "scenarios").mkdir()
    lines = []
    for index in range(args.scenarios):
        lines.append(
            textwrap.dedent(
                f"""\
                - id: bench-{index:05d}
                  persona: Person {index}, writes short messages and answers what is asked.
                  goal: Find out what to do about symptom number {index}.
                  facts: [The symptom started {index % 7 + 1} days ago., It gets worse at night.]
                  max_turns: {args.turns}
                """
            )
        )
    (folder / "scenarios" / "bench.yaml").write_text("".join(lines), encoding="utf-8")
    (folder / "judges").mkdir()
    for index in range(args.criteria):
        (folder / "judges" / f"c{index}.yaml").write_text(
            textwrap.dedent(
                f"""\
                id: criterion-{index}
                criterion: The bot follows rule number {index} of the service.
                pass: the bot followed rule {index}.
                fail: the bot broke rule {index}.
                """
            ),
            encoding="utf-8",
        )
    p = args.provider
    judges = f"judges: {{paths: [judges], model: {p}:fake}}" if args.criteria else ""
    url = f"{base_url}/v1" if p == "openai" else base_url
    budget = f", rpm: {args.rpm:g}" if args.rpm else ""
    pacing = "" if args.pace_from_headers else ", pace_from_headers: false"
    suite = textwrap.dedent(
        f"""\
        name: bench
        scenarios: {{paths: [scenarios]}}
        bot:
          type: chat
          model: {p}:fake-bot
          system_prompt: You are a helpful triage assistant. Ask one question at a time.
          max_tokens: 200
        user: {{model: "{p}:fake-user", max_tokens: 200}}
        {judges}
        runs: {args.repeats}
        concurrency: {args.concurrency}
        record_raw: false
        providers:
          {p}: {{base_url: "{url}", max_connections: {args.connections}, timeout_s: 60{budget}{pacing}}}
        """
    )
    path = folder / "suite.yaml"
    path.write_text(suite, encoding="utf-8")
    return path


def _start_server(
    args: argparse.Namespace, *, capture_stderr: bool = False
) -> tuple[subprocess.Popen[str], str]:
    """The fake LLM server for a shape; the other benches' shapes need only `latency_ms` (the rest default
    to a server with no limit and no refusals). `capture_stderr`: keep its closing line ("served N
    requests") for the caller to read after stopping it."""
    command = [PYTHON, str(ROOT / "bench" / "serve.py"), "--latency-ms", str(args.latency_ms)]
    if getattr(args, "server_rpm", None):
        command += ["--rpm", str(args.server_rpm)]
        if getattr(args, "server_burst", None):
            command += ["--burst", str(args.server_burst)]
        if not getattr(args, "server_headers", True):
            command += ["--no-headers", "--budget-retry-after", "1"]  # "429, Retry-After: 1", nothing else
    if getattr(args, "error_429", 0.0):
        command += ["--error-429", str(args.error_429), "--retry-after", str(args.retry_after)]
        if getattr(args, "instant_429", False):
            command += ["--instant-429"]
    server = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if capture_stderr else None,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url.startswith("http"):
        server.kill()
        raise SystemExit(f"the fake server did not start (said {url!r})")
    return server, url


def _run_engine(
    suite: Path, out: Path, profile: Path | None, sample: Path | None = None, workers: str | None = None
) -> tuple[float, float, int, int, tuple[float, float]]:
    """Run `simulator run` in a child process, as a user starts it; (wall s, CPU s, peak RSS KiB, exit
    code, (exec, exit) as epoch seconds) of that child."""
    command = [PYTHON]
    if sample is not None:  # py-spy samples (collapsed stacks): no per-call overhead, unlike cProfile
        command = ["py-spy", "record", "--format", "raw", "--rate", "250", "-o", str(sample), "--", PYTHON]
    run = ["run", str(suite), "--out", str(out), "--no-progress"]
    if workers:  # local worker processes (`--workers N|auto`), merged into one record
        run += ["--workers", workers]
    if profile is not None:  # `cli.main`, not `python -m simulator`, whose fast exit would skip the dump
        code = f"import cProfile; from simulator.cli import main; cProfile.run({f'main({run!r})'!r}, {str(profile)!r})"
        command += ["-c", code]
    else:
        command += ["-m", "simulator", *run]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_API_KEY": "bench-key",
        "ANTHROPIC_API_KEY": "bench-key",
    }
    exec_at, started = time.time(), time.perf_counter()
    child = subprocess.Popen(command, cwd=suite.parent, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, child.returncode, (exec_at, exec_at + wall)


def _help_start_s(repeats: int = 5) -> float:
    """Best of `repeats` wall times of `simulator --help`."""
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(
            [PYTHON, "-m", "simulator", "--help"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            check=True,
        )
        best = min(best, time.perf_counter() - started)
    return best


def _lower_bound(
    args: argparse.Namespace, conversations: int, calls: int, judged: bool, refused: int = 0
) -> tuple[float, str, dict[str, float]]:
    """The critical-path lower bound (seconds) and which limit binds.

    chain: the longest run of calls that must happen one after another: 2 per turn, then the judges and
    the fidelity audit side by side (`_after_chain`); connections: every call needs a connection for `latency`; conversations: each
    conversation in flight holds one of `concurrency` slots for its whole chain.
    """
    latency = args.latency_ms / 1000
    chain_calls = 2 * args.turns + (_after_chain(args, calls, conversations) if judged else 0)
    bounds = {
        "chain": chain_calls * latency,
        "connections": calls * latency / args.connections,
        "conversations": math.ceil(conversations / args.concurrency) * chain_calls * latency,
    }
    budget = min(x for x in (args.rpm, args.server_rpm, math.inf) if x)
    if budget < math.inf:
        # At most `budget` answered calls a minute (refused ones are not counted by the provider).
        bounds["budget"] = (calls - refused) / (budget / 60)
    binding = max(bounds, key=lambda name: bounds[name])
    return bounds[binding], binding, bounds


def _judge_waves(args: argparse.Namespace) -> int:
    """Judge calls one after another: 2 where the provider caches prompts on request (the first criterion
    alone, then the rest: `Provider.warm_prompt_cache`), else 1 (all criteria at once)."""
    return 2 if args.provider == "anthropic" and args.criteria > 1 else 1


def _audit_calls(args: argparse.Namespace, calls: int, conversations: int) -> int:
    """The fidelity audit's calls per conversation: what is left after the turns and the criteria."""
    return max(0, round(calls / conversations) - 2 * args.turns - args.criteria)


def _after_chain(args: argparse.Namespace, calls: int, conversations: int) -> int:
    """Sequential calls after the last turn: the audit runs beside the judges (`user.fidelity.on_fail:
    keep_and_flag`, the bench's suite), so the longer of the two counts, not their sum."""
    return max(_judge_waves(args), _audit_calls(args, calls, conversations))


def _process_figures(manifest: dict[str, Any], times: tuple[float, float]) -> dict[str, float]:
    """Start-up (exec to the manifest's start: interpreter, imports, suite, clients) and exit (the end of
    the work, as the manifest says, to the process's exit) of one `simulator run`."""
    created = datetime.fromisoformat(manifest["created_at"]).timestamp()
    ended = datetime.fromisoformat(manifest["ended_at"]).timestamp()
    return {"startup_s": created - times[0], "exit_s": times[1] - ended}


def _mean_call_latency(out: Path) -> float:
    """Mean seconds per model call as the engine saw it (request sent to answer parsed), from the records."""
    total, count = 0.0, 0
    for name, field in (("conversations.jsonl", "turns"), ("verdicts.jsonl", None)):
        path = out / name
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                for item in record[field] if field else [record]:
                    if item.get("latency_s"):
                        total += item["latency_s"]
                        count += 1
    return total / count if count else 0.0


def _measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server, url = _start_server(args)
    try:
        suite = _write_suite(work, args, url)
        out = work / "run"
        profile = Path(args.profile).resolve() if args.profile else None
        sample = Path(args.sample).resolve() if args.sample else None
        wall, cpu, rss_kib, code, times = _run_engine(suite, out, profile, sample, args.workers)
    finally:
        server.terminate()
        _, _, server_usage = os.wait4(server.pid, 0)
        server.returncode = 0
    if code != 0:
        raise SystemExit(f"simulator run exited {code}")
    if args.keep_run:
        shutil.copytree(out, Path(args.keep_run) / f"run-{time.time_ns()}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    counts = manifest["counts"]
    totals: dict[str, dict[str, int]] = {}
    for session in manifest["sessions"]:
        for provider, tally in session["calls"].items():
            for key in ("attempts", "retries", "rate_limits"):
                totals.setdefault(provider, {}).setdefault(key, 0)
                totals[provider][key] += tally[key]
    calls = sum(provider["attempts"] for provider in totals.values())
    limits = [limit for session in manifest["sessions"] for limit in session.get("limits", {}).values()]
    paced = [limit for limit in limits if limit.get("rpm")]
    conversations = counts["conversations"]
    verdict_lines = (
        sum(1 for _ in (out / "verdicts.jsonl").open()) if (out / "verdicts.jsonl").exists() else 0
    )
    judged = calls > conversations * 2 * args.turns
    run_wall = (
        datetime.fromisoformat(manifest["ended_at"]) - datetime.fromisoformat(manifest["created_at"])
    ).total_seconds()
    refused = sum(provider["rate_limits"] for provider in totals.values())
    bound, binding, bounds = _lower_bound(args, conversations, calls, judged, refused)
    return {
        **_process_figures(manifest, times),
        "judge_waves": _judge_waves(args),
        "audit_calls": _audit_calls(args, calls, conversations),
        "conversations": conversations,
        "calls": calls,
        "calls_per_conversation": calls / conversations,
        "verdicts": verdict_lines,
        "process_wall_s": wall,
        "run_wall_s": run_wall,
        "lower_bound_s": bound,
        "binding": binding,
        "bounds_s": bounds,
        "efficiency": run_wall / bound,
        "engine_cpu_s": cpu,
        "engine_cpu_ms_per_call": 1000 * cpu / calls,
        "peak_rss_mb": rss_kib / 1024,
        "server_cpu_s": server_usage.ru_utime + server_usage.ru_stime,
        "retries": sum(provider["retries"] for provider in totals.values()),
        "rate_limited": sum(provider["rate_limits"] for provider in totals.values()),
        "lowest_limit": min((limit["lowest"] for limit in limits), default=None),
        # Conversations open at once: above `concurrency` while calls waited out a retry (lent places).
        "most_open": max((s.get("most_open") or 0 for s in manifest["sessions"]), default=0),
        "paced_rpm": paced[-1]["rpm"] if paced else None,
        "rpm_source": paced[-1].get("rpm_source") if paced else None,
        "observed_rpm": paced[-1].get("observed_rpm") if paced else None,
        "errors": counts["errors"],
        "calls_per_s": calls / run_wall,
        "mean_call_latency_s": _mean_call_latency(out),
        "stop_reasons": counts["stop_reasons"],
    }


def _spread(values: list[float], digits: int = 3) -> str:
    """`median (min-max)` of the runs."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return (
        f"{mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})" if len(values) > 1 else f"{mid:.{digits}f}"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--scenarios", type=int, default=125)
    add("--repeats", type=int, default=8)
    add("--turns", type=int, default=8)
    add("--criteria", type=int, default=6)
    add("--latency-ms", type=float, default=100.0)
    add("--concurrency", type=int, default=100, help="conversations in flight")
    add("--connections", type=int, default=100, help="max_connections of the provider")
    add("--provider", choices=("openai", "anthropic"), default="openai", help="wire format and SDK")
    add("--runs", type=int, default=3, help="measure this many times; median and range (default 3)")
    add("--rpm", type=float, default=None, help="the suite's request budget (providers.<name>.rpm)")
    add("--server-rpm", type=float, default=None, help="the fake provider's rate limit, requests/minute")
    add("--server-burst", type=float, default=None, help="what its bucket saves up (default a minute's)")
    add("--no-pace-from-headers", dest="pace_from_headers", action="store_false", help="ignore the headers")
    add(
        "--rate-limit",
        help="the fake provider's rate limit as rpm=N[,burst=B][,headers=off]: a token bucket answering 429 "
        "beyond it; headers=off sends no rate-limit headers and Retry-After: 1 (burst default 10)",
    )
    add("--error-429", type=float, default=0.0, help="share of random 429s from the fake server")
    add("--instant-429", action="store_true", help="answer the random 429s at once, without the latency")
    add("--retry-after", type=float, default=1.0, help="their Retry-After, seconds")
    add("--profile", help="write a cProfile of the engine process to this file (one run)")
    add("--sample", help="write py-spy's collapsed stacks of the engine process to this file (one run)")
    add("--keep-run", help="copy each run folder into this directory (for a look at its records)")
    add("--json", action="store_true", help="print the figures as JSON")
    add("--workers", help="run with `simulator run --workers N|auto` (local worker processes)")
    return parser


def _rate_limit(args: argparse.Namespace) -> None:
    """`--rate-limit rpm=600,headers=off` into --server-rpm, --server-burst and the headers switch."""
    args.server_headers = True
    if not args.rate_limit:
        return
    fields = dict(part.split("=", 1) for part in args.rate_limit.split(",") if "=" in part)
    unknown = set(fields) - {"rpm", "burst", "headers"}
    if unknown or "rpm" not in fields:
        raise SystemExit(f"--rate-limit takes rpm=N[,burst=B][,headers=off], not {args.rate_limit!r}")
    args.server_rpm = float(fields["rpm"])
    args.server_burst = float(fields.get("burst", 10))
    args.server_headers = fields.get("headers", "on") != "off"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _rate_limit(args)
    runs = 1 if args.profile or args.sample else max(1, args.runs)
    _compile_bytecode()
    machine = (
        f"{os.cpu_count()} cores, reference loop {reference_cpu_s():.3f} s CPU, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"machine            {machine} (before)", flush=True)
    results = []
    for index in range(runs):
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
        with tempfile.TemporaryDirectory(prefix="simulator-bench-") as tmp:
            figures = _measure(args, Path(tmp))
        figures["load_before"] = load_before
        figures["load_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        results.append(figures)
        print(
            f"run {index + 1}/{runs}          wall {figures['run_wall_s']:.2f} s, efficiency "
            f"{figures['efficiency']:.3f}, engine CPU {figures['engine_cpu_ms_per_call']:.3f} ms/call, "
            f"{figures['calls_per_s']:.1f} calls/s, load {load_before} -> {figures['load_after']}",
            flush=True,
        )
    help_s = _help_start_s()
    if args.json:
        print(json.dumps({"runs": results, "help_start_s": help_s, "cores": os.cpu_count()}, indent=2))
        return 0
    _print_summary(args, results, help_s)
    return 0


def reference_cpu_s() -> float:
    """CPU seconds of a fixed pure-Python loop (best of 3): the machine's single-core speed, printed beside
    every figure so that two sessions' figures can be compared. Machines differ: the same commit's start-up
    took 0.418 s of CPU on one and 0.777 s on another (docs/performance.md, "Machines")."""
    best = math.inf
    for _ in range(3):
        started = time.process_time()
        total = 0
        for i in range(2_000_000):
            total += i * i % 7
        best = min(best, time.process_time() - started)
    return best


def _compile_bytecode(trees: list[Path] | None = None) -> None:
    """Write the engine's bytecode before measuring, as `pip install` does: a checkout run with
    PYTHONDONTWRITEBYTECODE=1 (as CI and some shells set it) compiles every module again at each start,
    0.2-0.3 s of start-up that no installed copy pays."""
    for tree in trees or [ROOT]:
        compileall.compile_dir(tree / "simulator", quiet=1)


def _print_summary(args: argparse.Namespace, results: list[dict[str, Any]], help_s: float) -> None:
    last = results[-1]
    bounds = ", ".join(f"{name} {value:.2f}s" for name, value in last["bounds_s"].items())
    lowest = last["lowest_limit"]
    print(
        textwrap.dedent(
            f"""            shape              {args.scenarios} scenarios x {args.repeats} repeats, {args.turns} turns, \
{args.criteria} criteria, {args.latency_ms:g} ms latency, concurrency {args.concurrency}, \
{args.connections} connections, {args.provider}
            conversations      {last["conversations"]} ({last["stop_reasons"]}), {last["verdicts"]} verdicts
            calls              {last["calls"]} ({last["calls_per_conversation"]:.1f} per conversation, \
{last["retries"]} retries, {last["rate_limited"]} rate limited; lowest connection limit {lowest}; \
conversations open at most {last["most_open"]})
            lower bound        {last["lower_bound_s"]:.2f} s ({last["binding"]} binds; {bounds})
            wall time          {_spread([r["run_wall_s"] for r in results], 2)} s run, median (range) of \
{len(results)}
            efficiency         {_spread([r["efficiency"] for r in results])} x the lower bound (wall / bound)
{_process_lines(results)}
            throughput         {_spread([r["calls_per_s"] for r in results], 1)} calls/s
            call latency       {_spread([1000 * r["mean_call_latency_s"] for r in results], 1)} ms as the \
engine saw it (the server waits {args.latency_ms:g} ms)
            engine CPU         {_spread([r["engine_cpu_ms_per_call"] for r in results])} ms per LLM call, \
user+sys, start-up included (fake server {_spread([r["server_cpu_s"] for r in results], 1)} s)
            peak RSS           {_spread([r["peak_rss_mb"] for r in results], 0)} MB (engine process)
            load average       {"; ".join(f"{r['load_before']} -> {r['load_after']}" for r in results)}
            machine            {os.cpu_count()} cores
            simulator --help   {help_s:.3f} s (best of 5)"""
        )
    )
    if args.server_rpm:
        refused = last["rate_limited"]
        minimum = (last["calls"] - refused) / (args.server_rpm / 60)
        print(
            f"rate limit         {args.server_rpm:g}/min (burst {args.server_burst or args.server_rpm:g}, headers "
            f"{'on' if args.server_headers else 'off'}): wall / minimum "
            f"{_spread([r['run_wall_s'] / minimum for r in results])} (minimum {minimum:.1f} s = answered calls / "
            f"rate); paced at {last['paced_rpm']} requests/min ({last['rpm_source']}), delivered about "
            f"{last['observed_rpm']}/min; {refused} refused; {last['errors']} errors"
        )


def _process_lines(results: list[dict[str, Any]]) -> str:
    """The process as a user sees it (exec to exit) beside the work and the bound; where the rest goes."""
    last = results[-1]
    waves = "first criterion alone, then the rest" if last["judge_waves"] == 2 else "all criteria at once"
    lines = [
        f"process wall       {_spread([r['process_wall_s'] for r in results], 2)} s exec to exit = bound + "
        f"{_spread([r['process_wall_s'] - r['lower_bound_s'] for r in results], 2)} s",
        f"start-up           {_spread([r['startup_s'] for r in results], 3)} s (exec to the run's start: "
        "interpreter, imports, suite, clients)",
        f"exit               {_spread([r['exit_s'] for r in results], 3)} s (the run's end to the process's exit)",
        f"chain              judges: {waves}; fidelity audit ({last['audit_calls']} call) beside the judges",
    ]
    return "\n".join(" " * 12 + line for line in lines)


if __name__ == "__main__":
    sys.exit(main())
