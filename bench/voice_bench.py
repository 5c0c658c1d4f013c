"""Voice bench: the simulated caller's and the transcriber's real-time factor, and how many calls one
process carries at once before the carrier's 20 ms media clock slips.

- **caller RTF**: seconds of espeak-ng synthesis (with the caller's pauses and line noise) per second of
  speech produced; below 1 is faster than real time.
- **transcriber RTF**: seconds of pocketsphinx decoding per second of audio, with a domain model (the
  example bot's phrases) and with the general English model.
- **calls at once**: K calls to a local phone bot (plain websockets, answering each utterance with 0.6 s
  of tone), each caller saying `--turns` utterances. For each K: the carrier's media frames late against
  their 20 ms schedule (p50 / p95 / max, ms), the CPU the process used per second of wall time, and
  whether the p95 lateness stayed under one frame (20 ms). The bot runs in the same process, so its
  work counts against the two cores too.

- **CPU real-time factors** (the firm figures on a shared machine): the same, in CPU seconds of this process
  and its children (espeak-ng) per second of speech; **calls per core**: one call's CPU per second (the
  carrier's share at the largest K, plus the bot's speech, `--bot-share` of the call, transcribed with the
  domain model), inverted.

Nothing is asserted. The load average is printed before and after (this machine has 2 cores shared with
other work): `python bench/voice_bench.py [--calls 1,4,8,16,32] [--turns 2] [--bot-share 0.5] [--json]`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.voice import wire  # noqa: E402
from simulator.voice.activity import rms_dbfs  # noqa: E402
from simulator.voice.call import Call  # noqa: E402
from simulator.voice.mulaw import FRAME_S, SAMPLE_RATE, decode, encode  # noqa: E402
from simulator.voice.speech import say  # noqa: E402
from simulator.voice.transcribe import Transcriber  # noqa: E402

SENTENCES = [
    "I want to find out whether I should go to the clinic about chest pain that started this afternoon.",
    "The pain spreads to my left arm.",
    "I am a little short of breath.",
    "I have a runny nose and a sore throat.",
    "My temperature is normal.",
]


def _phrases() -> list[str]:
    text = (ROOT / "examples" / "voice" / "bot_phrases.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _cpu() -> float:
    """CPU seconds of this process and its finished children (espeak-ng runs as one): on a shared machine
    the firm figure, where wall time also counts the other work."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


CPU_RTF: dict[str, float] = {}  # the same real-time factors in CPU seconds per second of speech


async def caller_rtf() -> tuple[float, float, list[Any]]:
    """Synthesis time per second of speech, the seconds of speech, and the utterances (for the decoder)."""
    cpu = _cpu()
    start, speech, utterances = time.perf_counter(), 0.0, []
    for index, text in enumerate(SENTENCES * 2):
        utterance = await say(text, voice="en-us+klatt2", rate_wpm=160, pause_s=0.35, disfluency=0.3,
                              noise_dbfs=-55, seed=f"bench:{index}")  # fmt: skip
        speech += utterance.duration
        utterances.append(utterance)
    CPU_RTF["caller"] = (_cpu() - cpu) / speech
    return (time.perf_counter() - start) / speech, speech, utterances


async def transcriber_rtf(utterances: list[Any], phrases: list[str] | None) -> float:
    transcriber = Transcriber(phrases)
    cpu, start, seconds = _cpu(), time.perf_counter(), 0.0
    for utterance in utterances:
        await transcriber.transcribe(decode(encode(utterance.samples)))
        seconds += utterance.duration
    transcriber.close()
    CPU_RTF["transcriber_domain" if phrases else "transcriber_general"] = (_cpu() - cpu) / seconds
    return (time.perf_counter() - start) / seconds


async def _tone_bot(ws: Any) -> None:
    """Answers each caller utterance (0.3 s of quiet after sound) with 0.6 s of tone, then a mark."""
    sid, last_sound = "", None
    reply = base64.b64encode(encode((6000 * np.sin(np.arange(4800) * 0.3)).astype(np.int16))).decode()
    async for text in ws:
        message = json.loads(text)
        if message["event"] == "start":
            sid = message["start"]["streamSid"]
        elif message["event"] == "media":
            loud = rms_dbfs(decode(base64.b64decode(message["media"]["payload"]))) > -45
            now = time.perf_counter()
            if loud:
                last_sound = now
            elif last_sound is not None and now - last_sound > 0.3:
                last_sound = None
                await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": reply}}))
                await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": "r"}}))


async def one_call(url: str, utterances: list[Any], turns: int, lateness: list[float]) -> None:
    call = Call(url, wire.CallIds.new(), {}, noise_dbfs=-55, seed=1)
    await call.dial()
    for utterance in utterances[:turns]:
        await call.speak(utterance)
        await asyncio.sleep(1.5)  # the bot's reply (0.3 s wait + 0.6 s) and a pause
    await call.hang_up()
    # Frame n was due at (n + 1) x 20 ms on the call's clock.
    lateness += [max(0.0, sent - (n + 1) * FRAME_S) for n, (sent, _) in enumerate(call.caller_frames)]


async def calls_at_once(counts: list[int], utterances: list[Any], turns: int) -> list[dict[str, Any]]:
    from websockets.asyncio.server import serve

    rows = []
    async with serve(_tone_bot, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        url = f"ws://127.0.0.1:{port}/"
        short = [u for u in utterances if u.duration < 3.0]
        for count in counts:
            lateness: list[float] = []
            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(*(one_call(url, short, turns, lateness) for _ in range(count)))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            ms = sorted(1000 * x for x in lateness)
            p95 = ms[int(0.95 * (len(ms) - 1))]
            rows.append({
                "calls": count, "frames": len(ms), "late_p50_ms": round(statistics.median(ms), 1),
                "late_p95_ms": round(p95, 1), "late_max_ms": round(ms[-1], 1),
                "cpu_per_wall": round(cpu / wall, 2), "keeps_time": p95 < 1000 * FRAME_S,
                "carrier_calls_per_core": round(count * wall / cpu) if cpu else None,
            })  # fmt: skip
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", default="1,4,8,16,32")
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--bot-share", type=float, default=0.5, help="share of a call the bot speaks")
    args = parser.parse_args()
    load_before = os.getloadavg()
    caller, speech, utterances = await caller_rtf()
    domain = await transcriber_rtf(utterances, _phrases() + SENTENCES)
    general = await transcriber_rtf(utterances[:4], None)
    rows = await calls_at_once([int(c) for c in args.calls.split(",")], utterances, args.turns)
    figures = {
        "cores": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
        "caller_rtf": round(caller, 3), "speech_s": round(speech, 1),
        "transcriber_rtf_domain": round(domain, 3), "transcriber_rtf_general": round(general, 3),
        "calls": rows, "load_after": [round(x, 2) for x in os.getloadavg()],
        "sample_rate": SAMPLE_RATE, "cpu_rtf": {k: round(v, 3) for k, v in CPU_RTF.items()},
    }  # fmt: skip
    # A call's CPU per second: its carrier (the busiest row's share) and the transcription of the bot's
    # speech (`--bot-share` of the call's time, decoded with the domain model): calls one core carries.
    busiest = rows[-1]
    carrier = busiest["cpu_per_wall"] / busiest["calls"]
    per_call = carrier + args.bot_share * CPU_RTF["transcriber_domain"]
    figures["calls_per_core"] = {"bot_share": args.bot_share, "cpu_per_call_second": round(per_call, 4),
                                 "calls": round(1 / per_call, 1)}  # fmt: skip
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"cores {figures['cores']} · load average before {figures['load_before']}")
    print(f"caller (espeak-ng, pauses, noise): RTF {caller:.3f} over {speech:.0f} s of speech")
    print(
        f"transcriber (pocketsphinx): RTF {domain:.3f} with the domain model, {general:.3f} general English"
    )
    print("calls at once  frames  late p50/p95/max (ms)  CPU per wall s  keeps the 20 ms clock")
    for row in rows:
        late = f"{row['late_p50_ms']}/{row['late_p95_ms']}/{row['late_max_ms']}"
        print(
            f"{row['calls']:>13}  {row['frames']:>6}  {late:>21}  {row['cpu_per_wall']:>14}  {row['keeps_time']}"
        )
    rtf = figures["cpu_rtf"]
    print(
        f"in CPU seconds per second of speech: caller {rtf['caller']}, transcriber {rtf['transcriber_domain']} "
        f"(domain) / {rtf['transcriber_general']} (general)"
    )
    per = figures["calls_per_core"]
    print(
        f"calls per core (carrier + the bot's {per['bot_share']:.0%} of speech transcribed, domain model): "
        f"{per['calls']} ({per['cpu_per_call_second']} CPU s per call second)"
    )
    print(f"load average after {figures['load_after']}")


if __name__ == "__main__":
    asyncio.run(main())
