"""WhatsApp bench: the engine's CPU per bot turn on the `whatsapp` channel, and conversations a second.

The bot is a real pywa 4 bot on FastAPI, started by the adapter as a suite starts it (its own process: its
CPU is not counted). With `--bot nostate` (tests/bots/pywa_nostate_bot.py) each conversation is two turns: a
typed message (a greeting and a list: the turn ends at the interactive message) and a tap on "Cough or cold"
(one text of advice: the turn ends at the quiet period). With `--bot burst-inline` / `burst-background`
(tests/bots/pywa_burst_bot.py): "Hello" (two texts) and "burst" (three texts 50 ms apart), the handlers run
inside the webhook request or after pywa's answer; with `--turn-end auto` an inline bot's turns end at the
webhook's answer once confirmed (docs/whatsapp.md#one-bot-turn).
`--concurrency` conversations run at once. Printed: the engine process's CPU (time.process_time, this
process only) per bot turn, against the goal of 2 ms; conversations per second of wall time (what the end
of a turn costs in waiting, with `--quiet-s`); how the turns ended; the load average before and after.
Nothing is asserted (a bench, not a test).

    python bench/whatsapp_bench.py --conversations 200 --concurrency 8 [--quiet-s 0.5] [--turn-end quiet]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_MS = 2.0


async def _conversation(factory: Any, number: int, ends: Counter[str], bot: str) -> None:
    from simulator.record.parts import PickPart

    session = await factory.open(f"bench-{number}")
    try:
        first = await session.send("Hello", 0)
        if bot == "nostate":
            second = await session.send("Cough or cold", 1, pick=PickPart(id="cold", title="Cough or cold"))
        else:
            second = await session.send("burst", 1)
        for reply in (first, second):
            ends[reply.raw["end"] if reply.raw else "?"] += 1
    finally:
        await session.aclose()


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    from simulator.bots.whatsapp import WhatsAppBotFactory
    from simulator.config.bots import BotStart
    from simulator.config.bots.whatsapp import WhatsAppBotConfig

    env = {
        "TRIAGE_GRAPH_URL": "{api_url}",
        "TRIAGE_PHONE_ID": "${WHATSAPP_PHONE_NUMBER_ID}",
        "TRIAGE_TOKEN": "${WHATSAPP_ACCESS_TOKEN}",
        "TRIAGE_APP_SECRET": "${WHATSAPP_APP_SECRET}",
        "TRIAGE_VERIFY_TOKEN": "${WHATSAPP_VERIFY_TOKEN}",
    }
    command = ["{python}", "-m", "tests.bots.pywa_nostate_bot", "--port", "{port}"]
    if args.bot != "nostate":
        serve = args.bot.removeprefix("burst-")
        command = ["{python}", "-m", "tests.bots.pywa_burst_bot", "--port", "{port}", "--serve", serve]
    start = BotStart(
        command=command,
        cwd=str(ROOT),
        env=env,
        ready={"url": "http://127.0.0.1:{port}/health", "timeout_s": 30},  # type: ignore[arg-type]
    )
    fields: dict[str, Any] = {"quiet_s": args.quiet_s, "timeout_s": 30, "start": start}
    if args.statuses:
        fields["statuses"] = ["sent", "delivered", "read"]
    if args.turn_end:
        fields["turn_end"] = args.turn_end
    config = WhatsAppBotConfig(webhook_url="http://127.0.0.1:{port}/webhook", **fields)
    factory = WhatsAppBotFactory(config, Path(tempfile.mkdtemp()), record_raw=not args.no_raw)
    ends: Counter[str] = Counter()
    try:
        await factory.start(None)
        await _conversation(factory, -1, Counter(), args.bot)  # warm: imports, connections
        gate = asyncio.Semaphore(args.concurrency)

        async def one(number: int) -> None:
            async with gate:
                await _conversation(factory, number, ends, args.bot)

        cpu, wall = time.process_time(), time.perf_counter()
        if args.profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)  # CPU, not wall: the machine is shared
            profiler.enable()
        await asyncio.gather(*(one(n) for n in range(args.conversations)))
        if args.profile:
            profiler.disable()
            profiler.dump_stats(args.profile)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await factory.aclose()
    turns = sum(ends.values())
    return {
        "conversations": args.conversations,
        "bot_turns": turns,
        "turn_ends": dict(ends),
        "engine_cpu_ms_per_turn": round(cpu * 1000 / turns, 3),
        "goal_ms_per_turn": GOAL_MS,
        "conversations_per_s": round(args.conversations / wall, 2),
        "wall_s": round(wall, 2),
        "quiet_s": args.quiet_s,
        "concurrency": args.concurrency,
        "statuses": bool(args.statuses),
        "bot": args.bot,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quiet-s", type=float, default=2.0, help="bot.quiet_s (its default: 2)")
    parser.add_argument("--turn-end", choices=["auto", "quiet"], default=None, help="bot.turn_end")
    parser.add_argument(
        "--bot",
        choices=["nostate", "burst-inline", "burst-background"],
        default="nostate",
        help="tests/bots/pywa_nostate_bot.py, or pywa_burst_bot.py (2 then 3 messages 50 ms apart) served "
        "inline (handlers inside the webhook request) or by pywa's FastAPI routes (in the background)",
    )
    parser.add_argument("--statuses", action="store_true", help="post sent, delivered, read per message")
    parser.add_argument("--no-raw", action="store_true", help="record_raw off (bodies not kept)")
    parser.add_argument("--profile", help="write a cProfile of the timed part to this file")
    args = parser.parse_args()
    before = [round(x, 2) for x in os.getloadavg()]
    figures = asyncio.run(_run(args))
    figures.update(
        load_before=before, load_after=[round(x, 2) for x in os.getloadavg()], cores=os.cpu_count()
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
