"""The Twilio Media Streams wire protocol, as the carrier side speaks it to a bot's WebSocket.

The carrier sends `connected`, then `start` (the call's ids, the media format, the custom parameters),
then one `media` message every 20 ms for the whole call (the caller's audio: 160 bytes of base64 8 kHz
μ-law, silence or line noise when the caller is quiet), `mark` when audio the bot queued before a mark
has been played (or dropped by `clear`), and `stop` when the call ends. The bot sends `media` (its audio,
any length, queued for playback), `mark` (a name to echo once what it queued before has played) and
`clear` (drop what is queued: the bot was interrupted). Every message but `connected` carries
`sequenceNumber` (a string counting from "1") and `streamSid`.
"""

from __future__ import annotations

__all__ = [
    "BotMessage",
    "CallIds",
    "WireError",
    "connected",
    "mark",
    "media",
    "parse_bot_message",
    "start",
    "stop",
]

import base64
import binascii
import secrets
from dataclasses import dataclass
from typing import Any, Literal

from simulator.jsonbounds import loads_bounded
from simulator.voice.mulaw import SAMPLE_RATE


class WireError(ValueError):
    """A message from the bot that the protocol does not allow (said as the bot's mistake)."""


@dataclass(frozen=True)
class CallIds:
    """A call's Twilio-shaped identifiers: account (AC…), call (CA…) and stream (MZ…), 34 characters each."""

    account_sid: str
    call_sid: str
    stream_sid: str

    @classmethod
    def new(cls, account_sid: str | None = None) -> CallIds:
        return cls(
            account_sid or "AC" + secrets.token_hex(16),
            "CA" + secrets.token_hex(16),
            "MZ" + secrets.token_hex(16),
        )


def connected() -> dict[str, Any]:
    return {"event": "connected", "protocol": "Call", "version": "1.0.0"}


def start(ids: CallIds, sequence: int, parameters: dict[str, str]) -> dict[str, Any]:
    return {
        "event": "start",
        "sequenceNumber": str(sequence),
        "start": {
            "accountSid": ids.account_sid,
            "streamSid": ids.stream_sid,
            "callSid": ids.call_sid,
            "tracks": ["inbound"],
            "customParameters": dict(parameters),
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": SAMPLE_RATE, "channels": 1},
        },
        "streamSid": ids.stream_sid,
    }


def media(ids: CallIds, sequence: int, chunk: int, timestamp_ms: int, payload: bytes) -> dict[str, Any]:
    """One frame of the caller's audio; `chunk` counts from 1, `timestamp_ms` from the stream's start."""
    return {
        "event": "media",
        "sequenceNumber": str(sequence),
        "media": {
            "track": "inbound",
            "chunk": str(chunk),
            "timestamp": str(timestamp_ms),
            "payload": base64.b64encode(payload).decode("ascii"),
        },
        "streamSid": ids.stream_sid,
    }


def mark(ids: CallIds, sequence: int, name: str) -> dict[str, Any]:
    return {
        "event": "mark",
        "sequenceNumber": str(sequence),
        "streamSid": ids.stream_sid,
        "mark": {"name": name},
    }


def stop(ids: CallIds, sequence: int) -> dict[str, Any]:
    return {
        "event": "stop",
        "sequenceNumber": str(sequence),
        "streamSid": ids.stream_sid,
        "stop": {"accountSid": ids.account_sid, "callSid": ids.call_sid},
    }


@dataclass(frozen=True)
class BotMessage:
    """What the bot sent: audio to queue, a mark to echo once played, or clear."""

    event: Literal["media", "mark", "clear"]
    audio: bytes = b""  # μ-law bytes, for media
    name: str = ""  # for mark


def parse_bot_message(text: str | bytes, stream_sid: str) -> BotMessage | None:
    """A message from the bot, checked against the protocol; None for an event the carrier ignores
    (Twilio ignores unknown events). Raises WireError for a broken one: not JSON, a media message without a
    base64 payload, a mark without a name, or another call's streamSid."""
    if isinstance(text, bytes):
        raise WireError("the bot sent a binary WebSocket frame; Media Streams messages are JSON text")
    try:
        data = loads_bounded(text, "the message")
    except ValueError:  # JSONRefused
        raise WireError(f"the bot sent a message that is not JSON: {text[:80]!r}") from None
    if not isinstance(data, dict):
        raise WireError(f"the bot sent {type(data).__name__} JSON; a message is an object with an `event`")
    event = data.get("event")
    if event not in ("media", "mark", "clear"):
        return None
    sid = data.get("streamSid")
    if sid != stream_sid:
        raise WireError(f"the bot's {event} message names streamSid {sid!r}; this call's is {stream_sid!r}")
    if event == "clear":
        return BotMessage("clear")
    if event == "mark":
        name = (data.get("mark") or {}).get("name") if isinstance(data.get("mark"), dict) else None
        if not isinstance(name, str) or not name:
            raise WireError("the bot's mark message has no mark.name")
        return BotMessage("mark", name=name)
    payload = (data.get("media") or {}).get("payload") if isinstance(data.get("media"), dict) else None
    if not isinstance(payload, str):
        raise WireError("the bot's media message has no media.payload (base64 8 kHz μ-law)")
    try:
        audio = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise WireError("the bot's media.payload is not base64") from None
    return BotMessage("media", audio=audio)
