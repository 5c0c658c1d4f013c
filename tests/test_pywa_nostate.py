"""The held-out style of bot through the engine: a WhatsApp triage bot on pywa 4 and FastAPI with no state
endpoint (tests/bots/pywa_nostate_bot.py), started by the suite, the offline user tapping its lists. The
report's findings must name what the bot did wrong in deed, by default: the false promise "A nurse will
call you back within 2 hours" (nothing booked), quoted, and the message with four reply buttons, counted
per scenario; the faulted conversation stays out of the clinical rates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.rundata import load_run
from simulator.cli import main
from simulator.record.folder import RunFolder
from simulator.record.redact import forget_secrets
from simulator.report.model import ReportOptions, build_report
from simulator.report.section import Table
from simulator.report.sections_run import scenarios_section
from tests._whatsapp_bots import QUIET_S

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "tests/data/pywa_nostate"
SECRETS = ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN")
PROMISE = "A nurse will call you back within 2 hours."


@pytest.fixture(autouse=True)
def _no_secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in SECRETS:  # the engine makes them up and hands them to the bot through start.env
        monkeypatch.delenv(name, raising=False)
    yield
    forget_secrets()


def _suite(tmp_path: Path, runs: int) -> Path:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        json.dumps(
            {
                "name": "pywa-nostate",
                "scenarios": {"paths": [str(SCENARIOS)]},
                "bot": {
                    "type": "whatsapp",
                    "webhook_url": "http://127.0.0.1:{port}/webhook",
                    "quiet_s": QUIET_S,
                    "timeout_s": 15,
                    "start": {
                        "command": ["{python}", "-m", "tests.bots.pywa_nostate_bot", "--port", "{port}"],
                        "cwd": str(ROOT),
                        "env": {
                            "TRIAGE_GRAPH_URL": "{api_url}",
                            "TRIAGE_PHONE_ID": "${WHATSAPP_PHONE_NUMBER_ID}",
                            "TRIAGE_TOKEN": "${WHATSAPP_ACCESS_TOKEN}",
                            "TRIAGE_APP_SECRET": "${WHATSAPP_APP_SECRET}",
                            "TRIAGE_VERIFY_TOKEN": "${WHATSAPP_VERIFY_TOKEN}",
                        },
                        "ready": {"url": "http://127.0.0.1:{port}/health", "timeout_s": 30},
                    },
                },
                "user": {"model": "offline", "vocabulary": str(ROOT / "examples/triage_vocabulary.yaml")},
                "judges": {"paths": [], "model": None},
                "outcome": {
                    "key": "triage_level",
                    "levels": ["self_care", "gp", "urgent", "emergency"],
                    "critical": "emergency",
                    # No state endpoint: the outcome is what the bot told the patient, by the vocabulary's
                    # level phrases (docs/outcome-sources.md).
                    "source": "messages",
                },
                "high_stakes_tag": "high-stakes",
                "runs": runs,
                "concurrency": 2,
                "seed": 0,
            }
        )
    )
    return suite


def test_the_report_names_the_false_promise_and_the_rule_breaking_message_per_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", str(_suite(tmp_path, runs=2)), "--out", str(out), "--no-progress"]) in (0, 1)
    records = {(r.scenario_id, r.repeat): r for r in RunFolder.open(out).conversations()}
    assert len(records) == 8
    # What the offline patient met: the planted flaws, and sound advice elsewhere.
    said = {key: [p for t in r.turns if t.role == "bot" for p in t.messages] for key, r in records.items()}
    assert said[("chest-pressure-only", 0)][-2:] == ["Book a GP appointment for the next few days.", PROMISE]
    assert said[("chest-pressure-arm", 0)][-1] == "Call 999 now and ask for an ambulance."
    assert said[("cough-cold", 0)][-1].startswith("Look after yourself at home")
    headache = records[("headache-bad", 0)]
    assert headache.error is not None and headache.error.kind == "cloud_api_rule"

    capsys.readouterr()
    report_json = tmp_path / "report.json"
    page = tmp_path / "report.html"
    assert main(["report", str(out), "--json", str(report_json), "--html", str(page)]) in (0, 1)
    printed = " ".join(capsys.readouterr().out.split())  # the terminal wraps long lines
    report = json.loads(report_json.read_text())

    # The false promise: a failed default claim, quoted, per scenario, a bug (the scenario is critical).
    (claim,) = report["unbacked_claims"]
    assert claim["criterion_id"] == "claim.callback" and claim["scenario_id"] == "chest-pressure-only"
    assert claim["quote"] == PROMISE and (claim["failed"]["k"], claim["failed"]["n"]) == (2, 2)
    assert claim["critical"] and "shows no tool call at all" in claim["reasoning"]
    findings = {(f["level"], f["title"]) for f in report["findings"]}
    assert ("bug", f'unbacked claim in chest-pressure-only (2/2): "{PROMISE}"') in findings
    assert f'"{PROMISE}"' in printed

    # The four reply buttons: a bot fault counted per scenario, with its rate, flagged on the scenario row.
    faults = report["bot_faults"]
    assert (faults["rate"]["k"], faults["rate"]["n"]) == (2, 8)
    assert faults["rate"]["clustered"]["scenarios"] == 4  # clustered by vignette
    (row,) = faults["scenarios"]
    assert row["scenario_id"] == "headache-bad" and not row["critical"]
    assert (row["rate"]["k"], row["rate"]["n"]) == (2, 2)
    assert row["kinds"] == {"cloud_api_rule": 2}
    assert "takes 1 to 3 reply buttons; the bot sent 4" in row["examples"][0]["detail"]
    assert ("warning", "bot faults in 2 of 8 conversations (1 scenario)") in findings
    assert "Bot faults per scenario (unit: conversations)" in printed
    html = page.read_text()
    assert "Bot faults per scenario (unit: conversations)" in html and "BOT FAULT" in html
    run = load_run(out)
    scenarios = scenarios_section(build_report(run))
    table = next(b for b in scenarios.blocks if isinstance(b, Table) and b.title.startswith("Scenarios"))
    flags = {row.cells[0].text: row.cells[8] for row in table.rows}
    assert flags["headache-bad"].text == "BOT FAULT" and flags["headache-bad"].state == "warn"
    assert "BOT FAULT" not in flags["chest-pressure-only"].text

    # Still excluded from the clinical rates: the outcome counts 6 conversations, the 2 faulted are errors.
    outcome = report["outcome"]
    assert outcome["errored"] == 2
    assert outcome["under_triage"]["n"] == 6
    # ...and decided from the bot's words: the planted under-triage (chest pressure, "None of these" -> GP)
    # is seen in both repeats, with the sentence that decided it, though the bot reports no state at all.
    assert outcome["source"] == ["messages"]
    assert (outcome["under_triage"]["k"], outcome["critical_sensitivity"]["k"]) == (2, 2)
    assert outcome["critical_sensitivity"]["n"] == 4
    under = [c for c in outcome["cases"] if c["kind"] == "under"]
    assert {c["scenario_id"] for c in under} == {"chest-pressure-only"} and len(under) == 2
    assert {c["quote"] for c in under} == {"Book a GP appointment for the next few days."}
    assert outcome["no_decision"]["k"] == 0
    assert "messages: Book a GP" in printed  # the deciding quote, in the cases table

    # A fault in a critical scenario is a bug in the summary, naming the scenario and its count.
    critical = build_report(run, ReportOptions(high_stakes_tag="neuro"))
    (bug,) = [f for f in critical.findings if f.title.startswith("bot faults")]
    assert bug.level == "bug" and bug.title == "bot faults in critical scenarios: headache-bad (2/2)"
