"""The held-out style of bot: a WhatsApp triage bot on pywa with **no state endpoint**
(tests/bots/pywa_triage_bot.py). With `outcome.source: messages` its outcome is what it told the patient,
so its planted under-triage (chest pressure + "None of these" -> "Book a GP appointment") is measured, with
the deciding quote, where the state source saw only `no decision`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.outcome import decided_outcome, outcome_metrics
from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.record.redact import forget_secrets
from tests._whatsapp_bots import QUIET_S
from tests.test_whatsapp_pywa import SECRETS, _config

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    yield
    forget_secrets()


def test_the_pywa_bot_without_state_gets_its_outcome_and_under_triage_from_its_messages(
    tmp_path: Path,
) -> None:
    start = _config().start
    assert start is not None
    pressure = (
        tmp_path / "chest-pressure.yaml"
    )  # chest pressure and none of the bot's red flags: an emergency
    pressure.write_text(
        json.dumps(
            {
                "id": "chest-pressure",
                "persona": "a 60-year-old man, brief and matter-of-fact",
                "goal": "Ask what to do about a heavy pressure in his chest.",
                "facts": ["Heavy pressure in my chest for an hour.", "I am 60 years old.", "No other symptoms."],
                "expected": {"triage_level": "emergency"},
                "max_turns": 8,
            }
        )
    )  # fmt: skip
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        json.dumps(
            {
                "name": "pywa-triage-messages",
                "scenarios": {
                    "paths": [
                        str(pressure),
                    ]
                },
                "bot": {
                    "type": "whatsapp",
                    "webhook_url": "http://127.0.0.1:{port}/webhook",
                    "quiet_s": QUIET_S,
                    "start": {**start.model_dump(exclude_none=True), "cwd": str(ROOT)},
                },
                "user": {"model": "offline", "vocabulary": str(ROOT / "examples/triage_vocabulary.yaml")},
                "judges": {"paths": [], "model": None},
                "runs": 1,
                "concurrency": 1,
                "outcome": {
                    "key": "triage_level",
                    "levels": ["self_care", "gp", "urgent", "emergency"],
                    "critical": "emergency",
                    "source": ["messages", "state"],
                },
            }
        )
    )
    out = tmp_path / "run"
    assert main(["run", str(suite), "--out", str(out), "--no-progress"]) in (0, 1)
    run = load_run(out)
    decided = {r.scenario_id: decided_outcome(run, r) for r in run.conversations}
    chest = decided["chest-pressure"]
    assert chest is not None
    # No state endpoint: the state reads nothing; the words decide.
    assert chest.readings["state"].value == "no decision"
    assert (chest.source, chest.value, chest.quote) == (
        "messages",
        "gp",
        "Book a GP appointment for the next few days.",
    )
    metrics = outcome_metrics(run)
    assert metrics is not None and metrics.source == ["messages", "state"]
    assert (metrics.critical_sensitivity.k, metrics.critical_sensitivity.n) == (0, 1)
    assert (metrics.under_triage.k, metrics.under_triage_decided.k, metrics.no_decision.k) == (1, 1, 0)
    assert not any(
        "never set" in w for w in run.warnings
    )  # no state is expected of it: no misspelt-key warning
    [case] = metrics.cases
    assert (case.kind, case.source, case.quote) == ("under", "messages", chest.quote)
