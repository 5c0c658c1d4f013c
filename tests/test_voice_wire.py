"""The carrier side of Twilio Media Streams: the μ-law codec, the messages, the playback queue (marks,
clear), and a real call to a phone bot on `websockets` checking frame sizes, the 20 ms clock, marks and
stop as the bot receives them."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import os
import time

import numpy as np
import pytest

# The voice extra (websockets) is missing: a newcomer's machine skips this file with the fix; CI, which sets
# SIMULATOR_REQUIRE_ALL=1, fails on the import instead, so no voice test is skipped there.
if importlib.util.find_spec("websockets") is None and os.environ.get("SIMULATOR_REQUIRE_ALL") != "1":
    pytest.skip('needs the voice extra: pip install -e ".[voice]"', allow_module_level=True)

from simulator.voice import mulaw, wire
from simulator.voice.call import Call
from simulator.voice.playback import Playback
from simulator.voice.speech import Utterance
from tests._voice_bots import Reply, ScriptedPhoneBot, tone
from tests.support.waiting import LATE_S, eventually

IDS = wire.CallIds("AC" + "0" * 32, "CA" + "1" * 32, "MZ" + "2" * 32)


def test_mulaw_matches_g711_code_points() -> None:
    # G.711 μ-law: silence is 0xFF, full scale positive 0x80, full scale negative 0x00.
    assert list(mulaw.encode(np.array([0, 1000, -1000, 32767, -32768]))) == [255, 206, 78, 128, 0]
    assert list(mulaw.decode(bytes([255, 127, 128, 0]))) == [0, 0, 32124, -32124]


def test_mulaw_round_trip_keeps_every_sample_within_its_segments_step() -> None:
    x = np.arange(-32768, 32768, dtype=np.int64)  # every 16-bit value
    error = np.abs(mulaw.decode(mulaw.encode(x)).astype(np.int64) - x)
    # 8-bit μ-law: the error grows with the level, about 1/20 of it (plus the bias near zero), never more.
    assert np.max(error / (np.abs(x) + 132)) < 0.055


@pytest.mark.parametrize(("samples", "frames"), [(160, 1), (161, 2), (8000, 50), (1, 1)])
def test_audio_is_cut_in_20_ms_frames_of_160_bytes(samples: int, frames: int) -> None:
    cut = mulaw.frames(np.full(samples, 1000, dtype=np.int16))
    assert len(cut) == frames and all(len(f) == 160 for f in cut)
    assert cut[-1][-1] == (
        0xFF if samples % 160 else mulaw.encode(np.array([1000]))[0]
    )  # padded with silence


def test_messages_have_the_twilio_shape() -> None:
    start = wire.start(IDS, 1, {"conversation": "a#0"})
    assert start["start"]["mediaFormat"] == {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    assert (start["sequenceNumber"], start["streamSid"], start["start"]["callSid"]) == (
        "1",
        IDS.stream_sid,
        IDS.call_sid,
    )
    media = wire.media(IDS, 3, 2, 20, bytes(160))
    assert media["media"] == {
        "track": "inbound",
        "chunk": "2",
        "timestamp": "20",
        "payload": media["media"]["payload"],
    }
    assert len(base64.b64decode(media["media"]["payload"])) == 160
    assert wire.stop(IDS, 9)["stop"] == {"accountSid": IDS.account_sid, "callSid": IDS.call_sid}
    assert wire.connected() == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    fresh = wire.CallIds.new()
    assert [fresh.account_sid[:2], fresh.call_sid[:2], fresh.stream_sid[:2]] == ["AC", "CA", "MZ"]
    assert {len(fresh.account_sid), len(fresh.call_sid), len(fresh.stream_sid)} == {34}


def _bot(event: str, **body: object) -> str:
    return json.dumps({"event": event, "streamSid": IDS.stream_sid, **body})


def test_bot_messages_are_read_and_checked() -> None:
    media = wire.parse_bot_message(
        _bot("media", media={"payload": base64.b64encode(b"\x01\x02").decode()}), IDS.stream_sid
    )
    assert media == wire.BotMessage("media", audio=b"\x01\x02")
    assert wire.parse_bot_message(_bot("mark", mark={"name": "m1"}), IDS.stream_sid) == wire.BotMessage(
        "mark", name="m1"
    )
    assert wire.parse_bot_message(_bot("clear"), IDS.stream_sid) == wire.BotMessage("clear")
    assert wire.parse_bot_message(_bot("dtmf"), IDS.stream_sid) is None  # ignored, as Twilio ignores it


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ("not json", "not JSON"),
        (b"\x00\x01", "binary"),
        ("[1, 2]", "object"),
        (json.dumps({"event": "media", "streamSid": "MZother", "media": {"payload": ""}}), "streamSid"),
        (_bot("media", media={}), "media.payload"),
        (_bot("media", media={"payload": "%%%"}), "not base64"),
        (_bot("mark", mark={}), "mark.name"),
    ],
)
def test_a_broken_bot_message_is_named(message: str | bytes, says: str) -> None:
    with pytest.raises(wire.WireError, match=says):
        wire.parse_bot_message(message, IDS.stream_sid)


def test_playback_plays_queued_audio_at_real_time_speed() -> None:
    play = Playback()
    play.add(1.0, mulaw.encode(tone(0.5)))
    play.add(1.1, mulaw.encode(tone(0.5)))  # arrived early: plays after the first
    assert play.queued_until == pytest.approx(2.0)
    spans = play.voiced_spans(0.0, 10.0)
    assert spans[0][0] == pytest.approx(1.0) and spans[-1][1] == pytest.approx(2.0)
    play.mark(1.2, "end")
    assert play.due_marks(1.99) == [] and play.due_marks(2.0) == ["end"]


def test_clear_drops_what_has_not_played_and_returns_pending_marks() -> None:
    play = Playback()
    play.add(0.0, mulaw.encode(tone(2.0)))
    play.mark(0.0, "after-reply")
    assert play.clear(0.75) == ["after-reply"]
    assert play.voiced_spans(0.0, 10.0)[-1][1] == pytest.approx(0.75)
    assert len(play.audio(0.0, 2.0).nonzero()[0]) <= 0.75 * 8000
    assert not play.busy(0.8) and play.clears == [0.75]


def _utterance(seconds: float) -> Utterance:
    return Utterance(tone(seconds, 300.0), "words", [(0.0, seconds)])


@pytest.mark.voice
async def test_a_call_streams_20_ms_frames_echoes_marks_and_ends_with_stop() -> None:
    reply = Reply(tone(1.0), 0.1)
    async with ScriptedPhoneBot([reply], end_gap_s=0.2) as bot:
        call = Call(bot.url, IDS, {"conversation": "x#0"}, noise_dbfs=None, seed=1)
        await call.dial()
        spoken = await call.speak(_utterance(0.4))
        # The reply (1 s) plays, then its mark comes back.
        await eventually(lambda: any(m["event"] == "mark" for _, m in bot.received), "the echoed mark")
        await call.hang_up()
        await eventually(lambda: bot.received[-1][1]["event"] == "stop", "the stop message")
    events = [m["event"] for _, m in bot.received]
    assert events[:2] == ["connected", "start"] and events[-1] == "stop"
    assert bot.received[1][1]["start"]["customParameters"] == {"conversation": "x#0"}
    media = [(t, m["media"]) for t, m in bot.received if m["event"] == "media"]
    assert all(len(base64.b64decode(m["payload"])) == 160 for _, m in media)
    assert [int(m["chunk"]) for _, m in media] == list(range(1, len(media) + 1))
    assert [int(m["timestamp"]) for _, m in media] == [20 * i for i in range(len(media))]
    # Real time, not a burst: frame n reaches the bot no sooner than n x 20 ms into the call (the bot and
    # the carrier share this process's perf_counter), and the last one about then, late only by what a
    # busy machine adds (the clock catches up after a late tick).
    t0 = time.perf_counter() - call.now()
    assert all(at - t0 >= 0.02 * int(m["chunk"]) - 0.001 for at, m in media)
    assert media[-1][0] - t0 <= 0.02 * len(media) + LATE_S
    assert spoken.end - spoken.start == pytest.approx(0.4, abs=0.03)
    # The mark the bot sent after its 1 s reply came back once the reply had played: never sooner, on
    # either side's clock, and late only by a tick and the line's delay.
    [(_, sent)] = bot.sent_at
    [(echoed_at, name)] = [(t, m["mark"]["name"]) for t, m in bot.received if m["event"] == "mark"]
    assert name == "reply-0" and 1.0 <= echoed_at - sent <= 1.0 + LATE_S
    [(received, _)], [(echoed, _)] = call.marks_received, call.marks_echoed
    played = call.playback.frames  # the reply, from its arrival (the mark came with it) for 1 s
    assert played[0].at <= received and played[-1].end == pytest.approx(played[0].at + 1.0)
    assert played[-1].end <= echoed <= played[-1].end + LATE_S
    assert bot.received[-1][1]["stop"]["callSid"] == IDS.call_sid


@pytest.mark.voice
async def test_clear_cuts_the_bots_audio_and_echoes_its_marks_at_once() -> None:
    async with ScriptedPhoneBot([Reply(tone(3.0), 0.05)], end_gap_s=0.2, yields=True) as bot:
        call = Call(bot.url, IDS, {}, noise_dbfs=None, seed=1)
        await call.dial()
        await call.speak(_utterance(0.3))
        await eventually(lambda: call.marks_received, "the bot's 3 s reply")
        await asyncio.sleep(0.5)  # the bot is into its reply
        spoken = await call.speak(_utterance(0.5))  # the caller barges in; the bot sends clear
        await eventually(lambda: call.marks_echoed, "the mark echoed on clear")
        await call.hang_up()
    [(arrived, _)] = call.marks_received  # the reply's mark, right after its audio: it would play 3 s
    [cleared] = call.playback.clears
    assert spoken.start <= cleared <= spoken.start + LATE_S  # in answer to the barge-in, the line's delay on
    assert call.playback.voiced_spans(0.0, 60.0)[-1][1] == pytest.approx(cleared, abs=0.021)
    [(echoed, name)] = call.marks_echoed
    # Echoed at the next tick after the clear, not after the 3 s the reply would have played.
    assert name == "reply-0" and echoed - cleared <= LATE_S and echoed < arrived + 3.0
