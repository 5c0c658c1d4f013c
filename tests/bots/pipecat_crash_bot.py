"""A pipecat phone bot (FastAPI WebSocket, `TwilioFrameSerializer`, espeak-ng speech) that says a greeting and
then ends the call the way PHONE_BOT_END says, for tests/test_voice_crash.py:
  raise  : the WebSocket endpoint raises once the greeting is said (the server drops the call)
  exit   : the whole process dies once the greeting is said, os._exit(1)
  hangup : says goodbye and ends its pipeline with EndWorkerFrame: the call closes normally (1000)

    python -m tests.bots.pipecat_crash_bot --port N
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from fastapi import FastAPI, WebSocket
from pipecat.frames.frames import BotStoppedSpeakingFrame, EndWorkerFrame, Frame, TTSSpeakFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from pipecat.workers.runner import WorkerRunner

from examples.voice.speech_services import EspeakTTSService

END = os.environ.get("PHONE_BOT_END", "hangup")


class Ender(FrameProcessor):
    """Once the bot has finished its greeting: ends the call as PHONE_BOT_END says."""

    def __init__(self, said: asyncio.Event) -> None:
        super().__init__()
        self.said = said

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, BotStoppedSpeakingFrame) and not self.said.is_set():
            self.said.set()
            print(f"ending the call: {END}", flush=True)
            if END == "exit":
                os._exit(1)
            if END == "hangup":
                await self.push_frame(EndWorkerFrame())
        await self.push_frame(frame, direction)


app = FastAPI()


@app.websocket("/ws")
async def media_stream(websocket: WebSocket) -> None:
    await websocket.accept()
    _, call = await parse_telephony_websocket(websocket)
    serializer = TwilioFrameSerializer(
        stream_sid=call.stream_id or "",
        call_sid=call.call_id,
        params=TwilioFrameSerializer.InputParams(auto_hang_up=False),
    )
    transport = FastAPIWebsocketTransport(
        websocket=websocket,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True, audio_out_enabled=True, add_wav_header=False, serializer=serializer
        ),
    )
    said = asyncio.Event()
    pipeline = Pipeline([transport.input(), Ender(said), EspeakTTSService(), transport.output()])
    worker = PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=8000, audio_out_sample_rate=8000)
    )
    greeting = "Nurse line. Goodbye." if END == "hangup" else "Nurse line. What is the problem today?"

    @transport.event_handler("on_client_connected")
    async def greet(_transport: Any, _client: Any) -> None:
        await worker.queue_frames([TTSSpeakFrame(greeting)])

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    if END == "raise":
        await said.wait()
        raise RuntimeError("pipeline crashed: LLM timeout")
    await running


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    uvicorn.run(app, host="127.0.0.1", port=parser.parse_args().port, log_level="warning")


if __name__ == "__main__":
    main()
