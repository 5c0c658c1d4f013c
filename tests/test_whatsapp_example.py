"""The shipped WhatsApp example: its suite runs offline with one command (the suite starts the bot), the
offline user taps its list and buttons, its documented flaw shows, no secret is written, and resume works."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from examples.whatsapp_triage_bot import _Bot, make_server
from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.record.parts import MediaPart, OptionsPart, PickPart
from simulator.record.redact import forget_secrets

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "examples" / "whatsapp" / "suite.yaml"
SECRETS = {
    "WHATSAPP_APP_SECRET": "example-app-secret-1",
    "WHATSAPP_ACCESS_TOKEN": "example-access-token-2",
    "WHATSAPP_VERIFY_TOKEN": "example-verify-token-3",
}


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    yield
    forget_secrets()


def _records(folder: Path) -> dict[str, object]:
    return {r.id: r for r in RunFolder.open(folder).conversations()}


def test_the_example_suite_runs_offline_with_buttons_picks_and_the_documented_flaw(
    tmp_path: Path, secrets_set: None
) -> None:
    out = tmp_path / "run"
    assert main(["run", str(SUITE), "--out", str(out), "--no-progress"]) == 0
    records = list(RunFolder.open(out).conversations())
    assert len(records) == 8 and all(r.stop_reason == "user_done" for r in records)
    for record in records:
        parts = [part for turn in record.turns for part in turn.parts]
        styles = {p.style for p in parts if isinstance(p, OptionsPart)}
        assert styles == {"list", "buttons"}  # the symptom list, then Yes / No / Not sure
        picks = [p for p in parts if isinstance(p, PickPart)]
        assert len(picks) >= 2 and all(p.offered for p in picks)
        bot_turn = next(t for t in record.turns if t.role == "bot")
        assert bot_turn.raw is not None and bot_turn.raw["end"] == "interactive"
    levels = {r.scenario_id: (r.final_state or {}).get("triage_level") for r in records}
    assert levels["stroke-face-droop-03"] == "emergency" and levels["ankle-injury-12"] == "urgent"
    assert levels["common-cold-19"] == "self_care"
    cold = next(r for r in records if r.scenario_id == "common-cold-19")
    [leaflet] = [p for t in cold.turns for p in t.parts if isinstance(p, MediaPart)]
    assert leaflet.kind == "document" and leaflet.ref is not None and leaflet.ref.endswith("self-care.pdf")
    assert levels["chest-pain-vague-01"] in ("gp", "urgent")  # the flaw: expected emergency
    log = (out / "bot.log").read_text()
    assert "examples.whatsapp_triage_bot" in log and "exited with code 0" in log
    for path in out.iterdir():
        text = path.read_text(encoding="utf-8", errors="replace")
        for value in SECRETS.values():
            assert value not in text, f"{value} written in {path.name}"


def test_an_interrupted_example_run_resumes_and_starts_the_bot_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in SECRETS:  # no secrets set: the engine makes them up for the bot it starts
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "run"
    assert main(["run", str(SUITE), "--out", str(out), "--no-progress"]) == 0
    lines = (out / "conversations.jsonl").read_text().splitlines(keepends=True)
    dropped = json.loads(lines[-1])["id"]  # as if the run had stopped before the last conversation
    (out / "conversations.jsonl").write_text("".join(lines[:-1]))
    verdicts = (out / "verdicts.jsonl").read_text().splitlines(keepends=True)
    (out / "verdicts.jsonl").write_text(
        "".join(v for v in verdicts if json.loads(v)["conversation_id"] != dropped)
    )
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert dropped in _records(out) and len(_records(out)) == 8
    assert (out / "bot.log").read_text().count("starting:") == 2  # a new process, new ports


@pytest.fixture
def example_bot() -> Iterator[str]:
    bot = _Bot("app-secret", "token", "verify", "http://127.0.0.1:9", "v21.0")
    server = make_server("127.0.0.1", 0, bot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/webhook"
    server.shutdown()
    server.server_close()


def test_the_example_bot_checks_signatures_and_answers_the_handshake(example_bot: str) -> None:
    body = b'{"object":"whatsapp_business_account","entry":[]}'
    good = "sha256=" + hmac.new(b"app-secret", body, hashlib.sha256).hexdigest()
    assert httpx.post(example_bot, content=body, headers={"X-Hub-Signature-256": good}).status_code == 200
    bad = "sha256=" + hmac.new(b"another-secret", body, hashlib.sha256).hexdigest()
    for signature in (bad, "", "sha256=00"):
        assert (
            httpx.post(example_bot, content=body, headers={"X-Hub-Signature-256": signature}).status_code
            == 403
        )
    query = {"hub.mode": "subscribe", "hub.verify_token": "verify", "hub.challenge": "1158201444"}
    answer = httpx.get(example_bot, params=query)
    assert answer.status_code == 200 and answer.text == "1158201444"
    assert httpx.get(example_bot, params={**query, "hub.verify_token": "wrong"}).status_code == 403
