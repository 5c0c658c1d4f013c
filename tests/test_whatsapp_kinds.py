"""Every message kind the Cloud API documents, sent by a real pywa 4 bot (tests/bots/pywa_kinds_bot.py) through
`simulator run`: taken by the local Graph API, recorded as parts the judges and the outcome reader read, and an
escalation sent with a location pin counted as escalated. A message the API refuses is still a bot error naming
the rule, and what the bot sent before it stays in the transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord
from simulator.record.parts import part_text
from simulator.record.redact import forget_secrets
from tests._whatsapp_bots import QUIET_S

ROOT = Path(__file__).resolve().parent.parent
SECRETS = ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN")
EMERGENCY = "Call 999 now and ask for an ambulance."


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in SECRETS:  # the engine makes them up and hands them to the bot through start.env
        monkeypatch.delenv(name, raising=False)
    yield
    forget_secrets()


def _run(tmp_path: Path, mode: str, **bot: Any) -> tuple[ConversationRecord, dict[str, Any]]:
    """One conversation with the bot in `mode`, run and reported by the CLI: (its record, report.json)."""
    suite = tmp_path / "suite.yaml"
    start = {
        "command": ["{python}", "-m", "tests.bots.pywa_kinds_bot", "--port", "{port}"],
        "cwd": str(ROOT),
        "env": {
            "KINDS_MODE": mode,
            "TRIAGE_GRAPH_URL": "{api_url}",
            "TRIAGE_PHONE_ID": "${WHATSAPP_PHONE_NUMBER_ID}",
            "TRIAGE_TOKEN": "${WHATSAPP_ACCESS_TOKEN}",
            "TRIAGE_APP_SECRET": "${WHATSAPP_APP_SECRET}",
            "TRIAGE_VERIFY_TOKEN": "${WHATSAPP_VERIFY_TOKEN}",
        },
        "ready": {"url": "http://127.0.0.1:{port}/health", "timeout_s": 30},
    }
    webhook = "http://127.0.0.1:{port}/webhook"
    config = {
        "name": f"pywa-kinds-{mode}",
        "scenarios": {"paths": [str(ROOT / "tests/data/pywa_kinds")]},
        "bot": {
            "type": "whatsapp",
            "webhook_url": webhook,
            "quiet_s": QUIET_S,
            "timeout_s": 15,
            "start": start,
            **bot,
        },
        "user": {"model": "offline", "vocabulary": str(ROOT / "examples/triage_vocabulary.yaml")},
        "judges": {"paths": [], "model": None},
        "outcome": {
            "key": "triage_level",
            "levels": ["self_care", "gp", "urgent", "emergency"],
            "critical": "emergency",
            "source": "messages",
        },
        "high_stakes_tag": "high-stakes",
        "runs": 1,
        "seed": 0,
    }
    suite.write_text(json.dumps(config))
    out = tmp_path / "run"
    assert main(["run", str(suite), "--out", str(out), "--no-progress"]) in (0, 1, 3)  # 3: all errored
    (record,) = RunFolder.open(out).conversations()
    report = tmp_path / "report.json"
    assert main(["report", str(out), "--json", str(report)]) in (0, 1)
    return record, json.loads(report.read_text())


def _shown(record: ConversationRecord) -> list[str]:
    return [part_text(part) for turn in record.turns if turn.role == "bot" for part in turn.parts]


def test_an_escalation_sent_with_a_location_pin_is_recorded_and_counted_as_escalated(tmp_path: Path) -> None:
    record, report = _run(tmp_path, "pin")
    assert record.error is None, record.error
    assert _shown(record)[:2] == [
        EMERGENCY,
        "[location] St Thomas' A&E, Westminster Bridge Rd (51.4989, -0.1188)",
    ]
    outcome = report["outcome"]
    assert outcome["errored"] == 0 and report["bot_faults"] is None
    assert (outcome["critical_sensitivity"]["k"], outcome["critical_sensitivity"]["n"]) == (1, 1)
    assert outcome["under_triage"]["k"] == 0


def test_every_other_kind_pywa_sends_reaches_the_transcript_as_the_person_reads_it(tmp_path: Path) -> None:
    texts = {"triage_emergency": "{{1}}, please call 999 now and ask for an ambulance."}
    record, report = _run(tmp_path, "all", templates=texts)
    assert record.error is None, record.error
    shown = _shown(record)
    assert shown == [
        "[reaction 👍]",
        EMERGENCY,
        "[link button] Call 999 -> https://www.nhs.uk/111",
        "[contact] NHS 111: phone 111 (WORK)",
        "Please share your location so I can find the nearest A&E.",
        "[location request] the person is asked to share their location (Send location)",
        "Tell us more about your symptoms.",
        "[form button] Start the form (WhatsApp Flow 1234567890)",
        "[sticker]",
        "[audio]",
        "Alex, please call 999 now and ask for an ambulance.",
    ]
    assert report["outcome"]["errored"] == 0 and report["outcome"]["critical_sensitivity"]["k"] == 1


def test_a_template_the_suite_does_not_give_is_recorded_as_unknown_with_its_parameters(
    tmp_path: Path,
) -> None:
    record, _ = _run(tmp_path, "all")
    assert record.error is None, record.error
    assert (
        "[template triage_emergency (en_GB): text not known to the simulator (give it in bot.templates); "
        "params: Alex]"
    ) in _shown(record)


def test_a_refused_message_is_a_bot_error_and_what_came_before_it_stays(tmp_path: Path) -> None:
    record, report = _run(tmp_path, "refused")
    assert record.error is not None and record.error.kind == "cloud_api_rule"
    assert "location.latitude is required and must be a number" in record.error.message
    assert _shown(record) == [EMERGENCY]  # sent before the refused pin: the person read it
    assert report["bot_faults"]["rate"]["k"] == 1 and report["outcome"]["errored"] == 1
