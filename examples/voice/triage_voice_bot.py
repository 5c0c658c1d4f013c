"""An example phone triage bot built on pipecat, reached over Twilio Media Streams (docs/voice.md).

It runs as a team ships a pipecat phone bot: a FastAPI WebSocket endpoint that Twilio's <Connect><Stream>
dials, pipecat's `parse_telephony_websocket` and `TwilioFrameSerializer`, Silero VAD (its model ships in
the pipecat wheel), then local speech: pocketsphinx STT and espeak-ng TTS (speech_services.py). A small
rule-based desk asks two questions and gives its advice, then hangs up. `GET /state/{call_sid}` returns
its decision and what it heard, for the run's outcome and the word error rate.

Its documented voice flaw: it takes the end of a caller's turn from a short pause (VAD `stop_secs` 0.5 s)
and does not listen while it answers (from choosing its reply until it has said it, it drops what the
caller says, as a bot muted while it responds does). A caller who pauses between sentences is cut off after the first one, and a
red flag said in the second half ("it goes into my left arm") is lost: chest pain that should be an
emergency is sent to the GP. A caller who talks without long pauses is triaged correctly.

    python -m examples.voice.triage_voice_bot --port 8766
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, WebSocket
from fastapi.responses import JSONResponse
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndWorkerFrame,
    Frame,
    TranscriptionFrame,
    TTSSpeakFrame,
    VADUserStartedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.serializers.twilio import TwilioFrameSerializer
from pipecat.transports.websocket.fastapi import FastAPIWebsocketParams, FastAPIWebsocketTransport
from pipecat.workers.runner import WorkerRunner

from examples.voice.speech_services import EspeakTTSService, PocketsphinxSTTService
from simulator.listening import exit_on_unlistenable, listening_socket

GREETING = "Nurse line. What is the problem today?"
QUESTIONS = [
    "Is the pain in the middle of your chest, and does it spread anywhere?",
    "Are you short of breath, or do you feel sick?",
]
ADVICE = {
    "emergency": "This could be your heart. Call nine nine nine now for an ambulance. Goodbye.",
    "urgent": "You need to be seen today. Go to an urgent care centre now. Goodbye.",
    "gp": "Please book an appointment with your GP in the next few days. Goodbye.",
    "self_care": "This sounds mild. Rest, drink fluids, and take paracetamol if you need it. Goodbye.",
}
# What the desk expects to hear, for the recogniser's language model (numbers and symptoms as spoken).
HEARD_PHRASES = [
    "I have chest pain", "the pain is in the middle of my chest", "it spreads to my left arm",
    "the pain goes into my left arm", "it goes to my jaw",
    "the pain spreads down my left arm and it feels heavy and tight", "the pain spreads to my arm and jaw",
    "I am a little short of breath", "I feel sick", "I am not short of breath", "no", "yes", "I am not sure",
    "I want to find out whether I should go to the clinic", "hello I want to know what to do",
    "I want to find out whether I should go to the clinic about chest pain that started this afternoon",
    "I want to find out what to do about a cold with a runny nose and a sore throat",
    "what should I do", "what do you think I should do", "so what do you advise",
    "I have a cold", "I have a runny nose and a sore throat", "I have had a cough for two days",
    "my temperature is normal", "it started this afternoon", "it started two days ago",
    "I twisted my ankle", "I have a headache", "it hurts when I breathe", "I am a smoker",
]  # fmt: skip
SYMPTOMS = {
    "chest": "chest",
    "arm": "radiating",
    "jaw": "radiating",
    "breath": "breathless",
    "sick": "nausea",
    "cold": "cold",
    "nose": "cold",
    "throat": "cold",
    "cough": "cold",
}


@dataclass
class CallRecord:
    """What the desk knows of one call: what it heard, what it dropped, its decision."""

    heard: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    findings: set[str] = field(default_factory=set)
    triage_level: str | None = None


CALLS: dict[str, CallRecord] = {}


def decide(findings: set[str]) -> str:
    if "chest" in findings and "radiating" in findings:
        return "emergency"
    if "chest" in findings and findings & {"breathless", "nausea"}:
        return "urgent"
    if "chest" in findings:
        return "gp"
    return "self_care"


class TriageDesk(FrameProcessor):
    """Asks its questions in order, one per caller turn, then advises and hangs up."""

    def __init__(self, record: CallRecord) -> None:
        super().__init__()
        self.record = record
        self.asked = 0
        self.speaking = False
        self.answering = False  # from choosing a reply until it has been said
        self.heard_while_speaking = False  # the caller's current utterance began while the bot spoke
        self.closing = False

    async def say(self, text: str) -> None:
        self.answering = True
        await self.push_frame(TTSSpeakFrame(text))

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, BotStartedSpeakingFrame):
            self.speaking = True
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self.speaking = self.answering = False
            if self.closing:
                await self.push_frame(EndWorkerFrame())  # hang up once the advice has been said
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self.heard_while_speaking = self.speaking
        if isinstance(frame, TranscriptionFrame):
            await self.heard(frame.text)
            return
        await self.push_frame(frame, direction)

    async def heard(self, text: str) -> None:
        if self.answering or self.heard_while_speaking or self.closing:
            self.record.dropped.append(text)  # THE FLAW: it does not listen while it answers
            return
        self.record.heard.append(text)
        self.record.findings |= {tag for word, tag in SYMPTOMS.items() if word in text.lower().split()}
        if self.asked < len(QUESTIONS) and "cold" not in self.record.findings:
            await self.say(QUESTIONS[self.asked])
            self.asked += 1
            return
        self.record.triage_level = decide(self.record.findings)
        self.closing = True
        await self.say(ADVICE[self.record.triage_level])


app = FastAPI()


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/state/{call_sid}")
async def state(call_sid: str) -> Any:
    record = CALLS.get(call_sid)
    if record is None:
        return JSONResponse({"error": "no such call"}, status_code=404)
    return {"triage_level": record.triage_level, "heard": record.heard, "dropped": record.dropped}


@app.websocket("/ws")
async def media_stream(websocket: WebSocket) -> None:
    await websocket.accept()
    _, call = await parse_telephony_websocket(websocket)
    record = CALLS.setdefault(call.call_id or "unknown", CallRecord())
    serializer = TwilioFrameSerializer(
        stream_sid=call.stream_id or "",
        call_sid=call.call_id,
        params=TwilioFrameSerializer.InputParams(auto_hang_up=False),  # no Twilio REST API here
    )
    transport = FastAPIWebsocketTransport(
        websocket=websocket,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True, audio_out_enabled=True, add_wav_header=False, serializer=serializer
        ),
    )
    desk = TriageDesk(record)
    pipeline = Pipeline(
        [
            transport.input(),
            VADProcessor(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.5))),
            PocketsphinxSTTService(phrases=HEARD_PHRASES + QUESTIONS),
            desk,
            EspeakTTSService(voice=os.environ.get("VOICE_BOT_VOICE", "en-us+klatt2")),
            transport.output(),
        ]
    )
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=8000, audio_out_sample_rate=8000),  # the phone band
    )

    @transport.event_handler("on_client_connected")
    async def greet(_transport: Any, _client: Any) -> None:
        await worker.queue_frames([TTSSpeakFrame(GREETING)])

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8766)
    args = parser.parse_args()
    with exit_on_unlistenable():  # a port already taken: one line with the fix, exit code 2
        sock = listening_socket("127.0.0.1", args.port)
    print(f"voice triage bot listening on ws://127.0.0.1:{sock.getsockname()[1]}/ws", flush=True)
    # A run ends with SIGTERM: close open calls after a second rather than wait for them.
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
