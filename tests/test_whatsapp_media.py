"""A user's photo or voice note on WhatsApp, delivered as the Cloud API delivers it: an `image` / `audio`
webhook naming a media id, `GET /{version}/{media-id}` answering its url, type, sha256 and size, and the bytes
at that url for the bearer token only. Through the engine's loop: the recorded user turn keeps what the
photo shows (`description`) or the voice note says (`transcript`), which is what the judge reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from simulator.bots.base import BotError
from simulator.bots.whatsapp.media import placeholder
from simulator.config.scenario import Scenario
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.record.parts import MediaPart, Part, TextPart, part_text
from simulator.record.redact import forget_secrets
from simulator.record.transcript import Turn
from simulator.users.base import END, UserMessage
from tests._whatsapp_bots import PlantedBot, channel_for, text

TOKEN = "access-token-456"
PHOTO = MediaPart(kind="image", caption="this rash on my leg", description="purple spots that do not fade")
VOICE = MediaPart(kind="audio", transcript="she has a fever and is very sleepy")


@pytest.fixture(autouse=True)
def _secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("WHATSAPP_APP_SECRET", "app-secret-123")
    monkeypatch.setenv("WHATSAPP_ACCESS_TOKEN", TOKEN)
    monkeypatch.setenv("WHATSAPP_VERIFY_TOKEN", "verify-token-789")
    yield
    forget_secrets()


@dataclass
class _WithMedia(UserMessage):
    """A user message carrying one media part (the shape the patient gives the engine: its parts)."""

    media: MediaPart | None = None

    def parts(self) -> list[Part]:
        parts: list[Part] = [self.media] if self.media is not None else []
        if self.text.strip() and (self.media is None or self.text != self.media.caption):
            parts.append(TextPart(text=self.text))
        return parts


class MediaUser:
    """A scripted patient: a photo of the rash with its caption, then a voice note, then done."""

    def __init__(self) -> None:
        self.sent = 0

    async def next_message(self, turns: list[Turn]) -> UserMessage:
        self.sent += 1
        if self.sent == 1:
            return _WithMedia(text=PHOTO.caption or "", media=PHOTO)
        if self.sent == 2:
            return _WithMedia(text="", media=VOICE)
        return UserMessage(text=END, done=True)


def _says_what_it_got(message: dict[str, Any], bot: PlantedBot) -> list[tuple[float, Any]]:
    if message["type"] in ("image", "audio"):
        got = bot.media_fetched[-1]
        return [
            (0.0, text(f"got your {message['type']}: {len(got['data'])} bytes, {got['info']['mime_type']}"))
        ]
    return [(0.0, text("How can I help?"))]


async def test_a_photo_and_a_voice_note_reach_the_bot_as_cloud_api_media_and_stay_in_the_record(
    tmp_path: Any,
) -> None:
    async for channel in channel_for(_says_what_it_got, tmp_path, verify=False, fetch_media=True):
        bot = channel.bot
        scenario = Scenario(id="rash-photo", persona="a worried parent", goal="ask about a rash", max_turns=4)
        record = await run_conversation(
            ConversationPlan(scenario, 0), lambda p, a: MediaUser(), channel.factory
        )
        assert record.error is None and record.stop_reason == "user_done", record.error
        # The webhooks: an image with its caption (no separate text for it), then a voice note.
        messages = [e["entry"][0]["changes"][0]["value"]["messages"][0] for e in bot.events]
        assert [m["type"] for m in messages] == ["image", "audio"]
        assert (
            messages[0]["image"]["caption"] == "this rash on my leg" and messages[1]["audio"]["voice"] is True
        )
        # The bot fetched each with its token: the bytes, their hash and size as the Graph API said.
        assert [f["info"]["mime_type"] for f in bot.media_fetched] == ["image/png", "audio/mpeg"]
        assert all(f["sha256_ok"] and len(f["data"]) == f["info"]["file_size"] for f in bot.media_fetched)
        assert bot.media_fetched[0]["data"] == placeholder(PHOTO)[0]
        assert b"purple spots that do not fade" in bot.media_fetched[0]["data"]  # the PNG's Description chunk
        bot_texts = [
            p.text for t in record.turns if t.role == "bot" for p in t.parts if isinstance(p, TextPart)
        ]
        assert bot_texts == [
            f"got your image: {len(placeholder(PHOTO)[0])} bytes, image/png",
            f"got your audio: {len(placeholder(VOICE)[0])} bytes, audio/mpeg",
        ]
        # The record keeps what the person showed and said, in the text the judge reads.
        user_turns = [t for t in record.turns if t.role == "user"]
        assert [part_text(t.parts[0]) for t in user_turns] == [
            "[image] this rash on my leg (shows: purple spots that do not fade)",
            "[audio] (says: she has a fever and is very sleepy)",
        ]
        notes = record.turns[1].raw["notes"] if record.turns[1].raw else []
        assert any(n.startswith("asked for media") for n in notes) and any(
            n.startswith("downloaded") for n in notes
        )


async def test_the_media_url_serves_the_bytes_for_the_bearer_token_only(tmp_path: Any) -> None:
    async for channel in channel_for(lambda m, b: [(0.0, text("ok"))], tmp_path, verify=False):
        bot = channel.bot
        session = await channel.factory.open("run/photo#0/1")
        await session.send("", 0, parts=[MediaPart(kind="image", description="a swollen ankle")])
        media_id = bot.events[0]["entry"][0]["changes"][0]["value"]["messages"][0]["image"]["id"]
        async with httpx.AsyncClient() as client:
            info = await client.get(
                f"{bot.api_url}/v26.0/{media_id}", headers={"Authorization": f"Bearer {TOKEN}"}
            )
            assert info.status_code == 200 and info.json()["id"] == media_id
            assert (await client.get(info.json()["url"])).status_code == 401  # no token: the API's 401
        # The refusal is recorded on the conversation the file belongs to (at its next turn).
        with pytest.raises(BotError) as caught:
            await session.send("hello", 1)
        assert caught.value.kind == "auth" and "bearer token" in str(caught.value)
        # A media id nobody sent: the API's error, and a bot error naming it.
        other = await channel.factory.open("run/photo#1/1")
        async with httpx.AsyncClient() as client:
            answer = await client.get(
                f"{bot.api_url}/v26.0/999", headers={"Authorization": f"Bearer {TOKEN}"}
            )
        assert answer.status_code == 400 and answer.json()["error"]["code"] == 100
        with pytest.raises(BotError, match="asked for media '999'"):
            await other.send("hi", 0)


async def test_a_burst_of_messages_is_one_webhook_each_and_a_plain_turn_is_one(tmp_path: Any) -> None:
    async for channel in channel_for(lambda m, b: [(0.0, text("ok"))], tmp_path, verify=False, quiet_s=0.3):
        session = await channel.factory.open("run/burst#0/1")
        burst = [
            TextPart(text="my chest hurts"),
            TextPart(text="and my left arm"),
            TextPart(text="since lunch"),
        ]
        await session.send("my chest hurts", 0, parts=burst)
        bodies = [e["entry"][0]["changes"][0]["value"]["messages"][0] for e in channel.bot.events]
        assert [m["text"]["body"] for m in bodies] == ["my chest hurts", "and my left arm", "since lunch"]
        await session.send("hello", 1, parts=[TextPart(text="hello")])  # plain: one webhook, as always
        assert len(channel.bot.events) == 4
