"""The whatsapp adapter against a bot built on the framework teams use: pywa 4 on FastAPI (tests/bots/
pywa_triage_bot.py), started by the suite. Replies addressed by BSUID (`recipient`, no `to`), replies to a tap
quoting it (`context`), list and buttons tapped, pywa's own signature check, a photo and a voice note fetched
with pywa's own media calls, and the bot's planted flaws as they reach the engine."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from simulator.bots.base import BotError, BotReply
from simulator.bots.whatsapp import WhatsAppBotFactory
from simulator.bots.whatsapp.media import placeholder
from simulator.cli import main
from simulator.config.bots import BotStart
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from simulator.record.folder import RunFolder
from simulator.record.parts import MediaPart, OptionsPart, PickPart, TextPart
from simulator.record.redact import forget_secrets
from tests._whatsapp_bots import QUIET_S

ROOT = Path(__file__).resolve().parent.parent
SECRETS = ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN")
# The bot's own variable names, filled from the engine's (made up for the run when unset).
BOT_ENV = {
    "TRIAGE_GRAPH_URL": "{api_url}",
    "TRIAGE_PHONE_ID": "${WHATSAPP_PHONE_NUMBER_ID}",
    "TRIAGE_TOKEN": "${WHATSAPP_ACCESS_TOKEN}",
    "TRIAGE_APP_SECRET": "${WHATSAPP_APP_SECRET}",
    "TRIAGE_VERIFY_TOKEN": "${WHATSAPP_VERIFY_TOKEN}",
}


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in SECRETS:  # the engine makes them up and hands them to the bot through start.env
        monkeypatch.delenv(name, raising=False)
    yield
    forget_secrets()


def _config(**bot_env: str) -> WhatsAppBotConfig:
    start = BotStart(
        command=["{python}", "-m", "tests.bots.pywa_triage_bot", "--port", "{port}"],
        cwd=str(ROOT),
        env={**BOT_ENV, **bot_env},
        ready={"url": "http://127.0.0.1:{port}/health", "timeout_s": 30},  # type: ignore[arg-type]
    )
    return WhatsAppBotConfig(
        webhook_url="http://127.0.0.1:{port}/webhook", quiet_s=QUIET_S, timeout_s=15, start=start
    )


async def _factory(tmp_path: Path, **bot_env: str) -> AsyncIterator[WhatsAppBotFactory]:
    factory = WhatsAppBotFactory(_config(**bot_env), tmp_path)
    try:
        await factory.start(tmp_path)  # serve the Graph API, start the bot, play the handshake
        yield factory
    finally:
        await factory.aclose()


def _bodies(reply: BotReply) -> list[dict[str, Any]]:
    assert reply.raw is not None
    return [m["body"] for m in reply.raw["messages"]]


def _tapped(reply: BotReply) -> dict[str, Any]:
    assert reply.raw is not None
    return dict(reply.raw["webhook"]["event"]["entry"][0]["changes"][0]["value"]["messages"][0])


async def test_the_pywa_bot_runs_its_list_and_buttons_by_bsuid_and_its_flaws_reach_the_engine(
    tmp_path: Path,
) -> None:
    async for factory in _factory(tmp_path):
        session = await factory.open("run/chest#0/1")
        first = await session.send("I have a pressure in my chest", 0)
        assert first.raw is not None and first.raw["end"] == "interactive"
        assert first.messages[0].startswith("Hello, I'm the clinic's triage helper")
        problems = first.parts[-1]
        assert isinstance(problems, OptionsPart) and problems.style == "list"
        assert problems.button == "Choose a problem"
        assert [(o.id, o.section) for o in problems.options][:2] == [
            ("chest", "Chest and breathing"),
            ("breathing", "Chest and breathing"),
        ]
        for body in _bodies(first):  # Graph API v26: addressed by the BSUID, no phone number
            assert body["recipient"] == session.who.user_id and "to" not in body
        assert any("read" in note for note in first.raw["notes"])  # pywa marked the message read

        second = await session.send("Chest pain", 1, pick=PickPart(id="chest", title="Chest pain"))
        tap = _tapped(second)
        assert tap["interactive"]["list_reply"]["id"] == "chest"
        assert tap["context"]["id"] == first.raw["messages"][-1]["id"]  # the tap answers the list message
        flags = second.parts[-1]
        assert isinstance(flags, OptionsPart) and [o.title for o in flags.options][-1] == "None of these"
        assert _bodies(second)[0]["context"] == {"message_id": tap["id"]}  # the reply quotes the tap

        # Planted flaws (a) and (b): chest pressure with "None of these" is sent to a GP, with a false promise.
        third = await session.send("None of these", 2, pick=PickPart(id="flag_none", title="None of these"))
        assert third.messages == [
            "Book a GP appointment for the next few days.",
            "A nurse will call you back within 2 hours.",  # sent after pywa read the first answer's contacts
        ]
        assert third.raw is not None and third.raw["end"] == "quiet"
        await session.aclose()

        other = await factory.open("run/chest#1/1")  # any red flag: 999
        await other.send("chest", 0)
        await other.send("Chest pain", 1, pick=PickPart(id="chest", title="Chest pain"))
        flagged = await other.send("arm", 2, pick=PickPart(id="flag_arm", title="Pain in arm or jaw"))
        assert flagged.messages == ["Call 999 now and ask for an ambulance. Do not drive yourself."]
        await other.aclose()

        # Planted flaw (c): four reply buttons, refused by the Cloud API; recorded at once as a bot error.
        headache = await factory.open("run/headache#0/1")
        await headache.send("my head hurts", 0)
        with pytest.raises(BotError) as caught:
            await headache.send("Headache", 1, pick=PickPart(id="headache", title="Headache"))
        assert caught.value.kind == "cloud_api_rule"
        assert "interactive.action.buttons takes 1 to 3 reply buttons; the bot sent 4" in str(caught.value)
        await headache.aclose()


async def test_a_photo_and_a_voice_note_are_fetched_by_the_pywa_bot_with_its_own_media_calls(
    tmp_path: Path,
) -> None:
    photo = MediaPart(kind="image", caption="this rash", description="a purple rash that does not fade")
    voice = MediaPart(kind="audio", transcript="my chest feels tight when I walk")
    async for factory in _factory(tmp_path):
        session = await factory.open("run/media#0/1")
        reply = await session.send("this rash", 0, parts=[photo])
        size = len(placeholder(photo)[0])
        assert reply.messages[0] == f"Thanks, I received your photo ({size} bytes, image/png)."
        assert reply.raw is not None
        message = reply.raw["webhook"]["event"]["entry"][0]["changes"][0]["value"]["messages"][0]
        assert message["type"] == "image" and message["image"]["caption"] == "this rash"
        assert message["image"]["mime_type"] == "image/png" and len(message["image"]["sha256"]) == 64
        notes = " ".join(reply.raw["notes"])
        assert f"asked for media {message['image']['id']}" in notes and "downloaded media" in notes

        voiced = await session.send("", 1, parts=[voice])
        size = len(placeholder(voice)[0])
        assert voiced.messages[0] == f"Thanks, I received your voice note ({size} bytes, audio/mpeg)."
        await session.aclose()


async def test_pywa_refuses_a_webhook_signed_with_another_app_secret(tmp_path: Path) -> None:
    async for factory in _factory(tmp_path, TRIAGE_APP_SECRET="the-bots-own-secret"):
        session = await factory.open("run/sig#0/1")
        with pytest.raises(BotError) as caught:
            await session.send("hello", 0)
        assert caught.value.kind == "http_status" and "HTTP 403" in str(caught.value)
        assert "X-Hub-Signature-256" in str(caught.value)


def test_a_suite_runs_the_pywa_bot_end_to_end_with_the_offline_user(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    start = _config().start
    assert start is not None
    suite.write_text(
        json.dumps(
            {
                "name": "pywa-triage",
                "scenarios": {
                    "paths": [
                        str(ROOT / "scenarios/triage/chest-pain-vague-01.yaml"),
                        str(ROOT / "scenarios/triage/common-cold-19.yaml"),
                    ]
                },
                "bot": {
                    "type": "whatsapp",
                    "webhook_url": "http://127.0.0.1:{port}/webhook",
                    "quiet_s": QUIET_S,
                    "statuses": ["sent", "delivered", "read"],
                    "start": {**start.model_dump(exclude_none=True), "cwd": str(ROOT)},
                },
                "user": {"model": "offline", "vocabulary": str(ROOT / "examples/triage_vocabulary.yaml")},
                "judges": {"paths": [], "model": None},
                "runs": 1,
                "concurrency": 2,
            }
        )
    )
    out = tmp_path / "run"
    assert main(["run", str(suite), "--out", str(out), "--no-progress"]) in (0, 1)
    records = list(RunFolder.open(out).conversations())
    assert len(records) == 2 and all(r.error is None for r in records), [r.error for r in records]
    for record in records:
        parts = [p for t in record.turns for p in t.parts]
        assert any(isinstance(p, OptionsPart) and p.style == "list" for p in parts)
        assert any(isinstance(p, PickPart) for p in parts)  # the offline user tapped
        assert any(isinstance(p, TextPart) and p.text.startswith("Hello, I'm the clinic") for p in parts)
    log = (out / "bot.log").read_text()
    assert "tests.bots.pywa_triage_bot" in log and "the bot process was killed by SIGTERM" in log
    assert sys.executable in log
    # pywa parsed every webhook the engine posted, status callbacks included (they name their contact).
    assert "Traceback" not in log and "Failed to construct update" not in log
    assert "status read for wamid." in log
