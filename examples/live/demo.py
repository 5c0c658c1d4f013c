"""The live-service demo, end to end on loopback: the triage web app (real OTel SDK) exports to
`simulator collect`, which assembles, redacts, samples, judges with the triage suite's criteria, fills the
review queue, and fires an alert when the bot is changed halfway (docs/collect.md).

    python -m examples.live.demo --conversations 2000 --out runs/live-demo

Offline: the judge is the project's fake LLM server with a scripted judge (a test double that fails
`no-diagnosis-no-prescribing` when the bot names a diagnosis, and passes everything else); point the suite
at a real judge model to judge for real. The users are scripted too: each tells one of a few complaints,
answers the bot's questions, and now and then repeats itself or leaves.
"""

from __future__ import annotations

__all__ = ["main", "run_demo"]

import argparse
import asyncio
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ALERT = "fail_rate(no-diagnosis-no-prescribing) > 1%"
OPENERS = [
    "I have had a sore throat since yesterday",
    "my back hurts after lifting boxes",
    "I have a rash on my arm, my email is sam.patient@example.org",
    "my son has a cough and a temperature",
    "I twisted my ankle playing football",
    "I have a headache that will not go away",
    "I keep getting heartburn after meals",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _decide(call: Any) -> str:
    from examples.live.triage_web import DIAGNOSIS

    bot = " ".join(t for s, t in call.messages if s == "bot")
    if call.criterion_id == "no-diagnosis-no-prescribing" and DIAGNOSIS in bot:
        return "fail"
    return "not_applicable" if call.criterion_id in ("responds-to-crisis", "asks-pregnancy") else "pass"


def _answer(bot: str, rng: random.Random) -> str:
    text = bot.lower()
    if "old" in text or "age" in text:
        return f"I am {rng.randint(18, 80)}"
    if "how long" in text or "when did" in text or "started" in text:
        return f"about {rng.randint(1, 9)} days"
    return "no"


async def _conversation(client: Any, url: str, number: int, rng: random.Random) -> int:
    key, user = f"web-{number:05d}", f"user-{rng.randint(1, 300)}"
    message, turns = rng.choice(OPENERS), 0
    for _ in range(6):
        reply = await client.post(
            f"{url}/chat", json={"conversation_id": key, "message": message, "user_id": user}
        )
        turns += 1
        said = " ".join(reply.json()["messages"])
        if "forget it" in message:
            break
        roll = rng.random()
        if roll < 0.03:
            message = "forget it, I'll call my GP instead"
        elif roll < 0.08:
            pass  # says the same thing again
        else:
            message = _answer(said, rng)
    return turns


async def _drive(url: str, count: int, drift_at: int, concurrency: int, seed: int) -> None:
    import httpx

    rng = random.Random(seed)
    slots = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=30) as client:

        async def one(number: int) -> None:
            async with slots:
                await _conversation(client, url, number, random.Random(rng.random() + number))

        await asyncio.gather(*(one(n) for n in range(drift_at)))
        await client.post(f"{url}/admin/version", json={"version": "v2"})  # the bot changes here
        await asyncio.gather(*(one(n) for n in range(drift_at, count)))


def _collector(out: Path, port: int, suite: Path, policy: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "simulator", "collect", "--port", str(port), "--out", str(out),
        "--idle-s", "3", "--roll-every", "1000", "--suite", str(suite), "--sample", str(policy),
        "--alert", ALERT, "--alert-window", "100", "--alert-every", "2",
        "--alert-file", str(out.parent / f"{out.name}-alerts.jsonl"),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DEMO_JUDGE_KEY": "offline"}
    return subprocess.Popen(command, env=env, cwd=ROOT)


def _status(url: str) -> dict[str, Any]:
    import httpx

    result: dict[str, Any] = httpx.get(f"{url}/status", timeout=5).json()
    return result


def _wait(predicate: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:
            pass
        time.sleep(0.25)
    raise RuntimeError("timed out")


def _files(out: Path, server_url: str) -> tuple[Path, Path]:
    suite = out.parent / f"{out.name}-suite.yaml"
    suite.write_text(
        "name: live-demo\n"
        "bot: {type: python, factory: 'examples.triage_bot:make_bot'}\n"
        f"judges: {{paths: ['{ROOT / 'judges' / 'triage'}'], model: 'anthropic:scripted-judge'}}\n"
        f"providers: {{anthropic: {{base_url: '{server_url}', api_key_env: DEMO_JUDGE_KEY}}}}\n"
    )
    policy = out.parent / f"{out.name}-policy.yaml"
    policy.write_text(
        "rate: 0.25\nalways: [handover, rephrased, elsewhere, negative_feedback]\nreview_passes: 0.02\n"
        "budget: {calls: 20000}\n"
    )
    return suite, policy


def run_demo(
    out: Path, conversations: int, drift_at: float = 0.5, concurrency: int = 16, seed: int = 0
) -> dict[str, Any]:
    """Run the whole demo; return what happened (counts, review queue size, the alert)."""
    import uvicorn

    from examples.live.triage_web import TriageWeb, create_app, default_provider
    from simulator.testing import FakeLLMServer
    from simulator.testing.fake_judges import ScriptedJudge

    out.parent.mkdir(parents=True, exist_ok=True)
    collect_port, web_port = _free_port(), _free_port()
    collect_url, web_url = f"http://127.0.0.1:{collect_port}", f"http://127.0.0.1:{web_port}"
    with FakeLLMServer(ScriptedJudge(_decide)) as judge_server:
        suite, policy = _files(out, judge_server.base_url)
        process = _collector(out, collect_port, suite, policy)
        try:
            _wait(lambda: _status(collect_url) is not None, 60)
            web = TriageWeb(default_provider(f"{collect_url}/v1/traces"))
            server = uvicorn.Server(
                uvicorn.Config(create_app(web), host="127.0.0.1", port=web_port, log_level="warning")
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            _wait(lambda: server.started, 30)
            started = time.monotonic()
            asyncio.run(_drive(web_url, conversations, int(conversations * drift_at), concurrency, seed))
            driven = time.monotonic() - started
            web.provider.force_flush()
            _wait(lambda: _status(collect_url)["counts"].get("conversations", 0) >= conversations, 120)
            _wait(lambda: _judged(_status(collect_url)), 300)
            alerts = out.parent / f"{out.name}-alerts.jsonl"
            _wait(lambda: alerts.exists() and alerts.read_text().strip(), 30)
            status = _status(collect_url)
            server.should_exit = True
            thread.join(10)
        finally:
            process.terminate()
            process.wait(30)
    return _summary(out, status, alerts, driven, conversations, int(conversations * drift_at))


def _judged(status: dict[str, Any]) -> bool:
    judge = status.get("judge") or {}
    return judge.get("sampled", 0) > 0 and judge["sampled"] == judge["judged"] + judge["over_budget"]


def _summary(
    out: Path, status: dict[str, Any], alerts: Path, driven: float, count: int, drift_at: int
) -> dict[str, Any]:
    fired = [json.loads(line) for line in alerts.read_text().splitlines() if line.strip()]
    first = fired[0]
    review = sum(len(p.read_text().splitlines()) for p in out.glob("live-*/review.jsonl"))
    numbers = sorted(int(m.group(1)) for c in first["conversations"] if (m := re.search(r"web-(\d+)", c)))
    return {
        "conversations": status["counts"]["conversations"],
        "spans": status["counts"]["spans"],
        "seconds_driving": round(driven, 1),
        "judge": status["judge"],
        "review_items": review,
        "drift_planted_at": drift_at,
        "alert": first["alert"],
        "alert_rate": first["rate"],
        "alert_interval_95": first["interval_95"],
        "alert_conversations": len(first["conversations"]),
        "earliest_conversation_behind_alert": numbers[0] if numbers else None,
        "folders": sorted(p.name for p in out.glob("live-*")),
        "total": count,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument(
        "--drift-at", type=float, default=0.5, help="share of conversations before the bot changes"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("runs/live-demo"))
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"--out {args.out} exists; name a new folder")
    print(json.dumps(run_demo(args.out, args.conversations, args.drift_at, args.concurrency), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
