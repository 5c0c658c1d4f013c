"""A Twilio Media Streams phone bot on plain `websockets` that ends each call the way PHONE_BOT_END says, for
the tests of a bot that crashes or dies mid-call (tests/test_voice_crash.py). It says a greeting (a tone)
unless PHONE_BOT_GREET=0, waits PHONE_BOT_AFTER_S, then:
  raise    : its handler raises (websockets closes the call with 1011, the process lives on)
  close1011: closes with 1011 and a reason, as a framework does after a failed pipeline
  reset    : aborts the TCP connection (no close frame: 1006)
  exit     : the whole process dies, os._exit(1)
  sigkill  : the whole process is killed, SIGKILL
  hangup   : says goodbye (a second tone) and closes normally (1000): a hang-up

    python -m tests.bots.crashing_phone_bot --port N
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal

import numpy as np
from websockets.asyncio.server import ServerConnection, serve

from simulator.voice.mulaw import SAMPLE_RATE, encode

END = os.environ.get("PHONE_BOT_END", "hangup")
GREET = os.environ.get("PHONE_BOT_GREET", "1") == "1"
AFTER_S = float(os.environ.get("PHONE_BOT_AFTER_S", "1.0"))


def _tone(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (8000.0 * np.sin(2 * np.pi * 440.0 * t)).astype(np.int16)


async def _say(ws: ServerConnection, sid: str, seconds: float) -> None:
    payload = base64.b64encode(encode(_tone(seconds))).decode()
    await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": payload}}))


async def _handle(ws: ServerConnection) -> None:
    sid = ""
    async for text in ws:
        message = json.loads(text)
        if message.get("event") == "start":
            sid = message["start"]["streamSid"]
            break
    if GREET:
        await _say(ws, sid, 0.4)
    await asyncio.sleep(AFTER_S)
    print(f"ending the call: {END}", flush=True)
    if END == "raise":
        raise RuntimeError("pipeline crashed: STT service unavailable")
    if END == "close1011":
        await ws.close(1011, "pipeline crashed")
    elif END == "reset":
        ws.transport.abort()
    elif END == "exit":
        os._exit(1)
    elif END == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        await _say(ws, sid, 0.3)  # goodbye
        await asyncio.sleep(0.5)
        await ws.close()


async def _serve(port: int) -> None:
    async with serve(_handle, "127.0.0.1", port) as server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(_serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
