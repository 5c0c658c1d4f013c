"""Imported runs through the ordinary commands (judge, report, show, compare, labels, calibrate), and
compare-populations, draft-scenario (drafts refused by run) and export-otel (file and OTLP/HTTP)."""

from __future__ import annotations

import csv
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply
from tests.fake_judge import FakeJudge
from tests.traces_helpers import EXAMPLES, ROOT, cli, require

SUITE = ROOT / "scenarios" / "triage" / "suite.yaml"
CRITERION = """\
id: says-999
criterion: The bot tells the user to call "999".
pass: the bot says to call 999.
fail: the bot does not say to call 999.
not_applicable: The user never mentions "chest".
severity: critical
category: communication
"""


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    assert cli("import", EXAMPLES / "transcripts.jsonl", "--out", tmp_path / "real") == 0
    return tmp_path / "real"


def test_judge_needs_judges_for_an_imported_run(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("judge", imported) == 2
    assert (
        "imported run with no suite; pass --suite FILE, or --judges PATH --judge-model M"
        in capsys.readouterr().err
    )


def test_judge_report_show_labels_calibrate_compare_on_an_imported_run(
    imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("judge", imported, "--suite", SUITE) == 0
    verdicts = [v for v in RunFolder.open(imported).verdicts() if v.criterion_id == "outcome.triage_level"]
    assert sorted(v.result for v in verdicts).count("fail") == 2  # real-002 and real-008 were under-triaged
    capsys.readouterr()
    manifest = RunFolder.open(imported).read_manifest()
    assert manifest.suite is not None and manifest.suite.outcome is not None and manifest.suite.runs == 1
    assert cli("report", imported, "--json", tmp_path / "r.json", "--html", tmp_path / "r.html") == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert "outcome.triage_level" in json.dumps(report) and "under-triage" in capsys.readouterr().out
    assert cli("show", imported, "--scenario", "real-006") == 0
    assert "face has dropped" in capsys.readouterr().out
    assert (
        cli("labels", "export", imported, "--criterion", "outcome.triage_level", "--out", tmp_path / "lab")
        == 0
    )
    sheet = tmp_path / "lab" / "labels.csv"
    rows = list(csv.DictReader(sheet.open()))
    for row in rows:
        row["label"] = "pass"
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli("calibrate", imported, sheet, "--json", tmp_path / "cal.json") == 0
    calibration = json.loads((tmp_path / "cal.json").read_text())
    assert "outcome.triage_level" in json.dumps(calibration)
    # The same file imported again is a comparable run (same conversation ids).
    assert cli("import", EXAMPLES / "transcripts.jsonl", "--out", tmp_path / "again") == 0
    assert cli("judge", tmp_path / "again", "--suite", SUITE) == 0
    assert cli("compare", imported, tmp_path / "again", "--json", tmp_path / "cmp.json") == 0
    assert json.loads((tmp_path / "cmp.json").read_text())


def test_judge_an_imported_run_with_judges_and_a_judge_model(
    imported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / "says-999.yaml").write_text(CRITERION)
    with FakeLLMServer(FakeJudge()) as server:
        # No suite: the SDK takes its endpoint and key from its own environment variables.
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        code = cli(
            "judge", imported, "--judges", tmp_path / "judges", "--judge-model", "anthropic:fake-judge"
        )
    assert code == 0
    results = {
        v.scenario_id: v.result for v in RunFolder.open(imported).verdicts() if v.criterion_id == "says-999"
    }
    assert results["real-001"] == "pass"  # "Call 999 now."
    assert results["real-003"] == "not_applicable"  # no chest
    assert len(results) == 10


def test_compare_populations_lists_largest_gaps_first(
    imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from simulator.analysis.populations import compare_populations

    sim = tmp_path / "sim"
    assert cli("run", SUITE, "--runs", "1", "--out", sim, "--no-progress") == 0
    assert cli("judge", imported, "--suite", SUITE) == 0
    capsys.readouterr()
    assert cli("compare-populations", sim, imported, "--json", tmp_path / "pop.json") == 0
    out = capsys.readouterr().out
    assert "not like reality" in out or "no measure differs" in out
    result = compare_populations(sim, imported)
    gaps = [row.gap for row in result.rows]
    assert gaps == sorted(gaps, reverse=True)
    measures = {row.measure for row in result.rows}
    assert {
        "turns per conversation",
        "user message length",
        "information volunteered",
        "stop reasons",
    } <= measures
    assert "failure rate: outcome.triage_level" in measures
    turns = next(r for r in result.rows if r.measure == "turns per conversation")
    assert turns.n_simulated == 22 and turns.n_real == 10
    assert json.loads((tmp_path / "pop.json").read_text())["rows"]


def test_volunteered_information_heuristic() -> None:
    from datetime import UTC, datetime

    from simulator.analysis.volunteer import information_units, volunteered_units
    from simulator.record.transcript import Turn

    now = datetime.now(UTC)

    def turn(role: str, text: str) -> Turn:
        return Turn(index=0, role=role, messages=[text], started_at=now)  # type: ignore[arg-type]

    assert information_units("hi, chest pain since lunch, spreading to my jaw, im 58 and sweating") == 4
    assert information_units("yes") == 0 and information_units("ok thanks") == 0
    terse = [turn("user", "chest pain"), turn("bot", "How old are you?"), turn("user", "52")]
    talkative = [
        turn("user", "chest pain, it goes to my arm, I'm 52"),
        turn("bot", "Are you breathless?"),
        turn("user", "yes, and I'm sweating, and I smoke"),
    ]
    assert volunteered_units(terse) == 0
    assert volunteered_units(talkative) == 2 + 1


def _draft_responder(call: FakeCall) -> FakeReply:
    assert "<transcript>" in call.messages[0].content
    return FakeReply(
        text=json.dumps(
            {
                "persona": "A 58-year-old man who writes tersely.",
                "goal": "Know if chest pain is serious.",
                "facts": ["I have chest pain since lunch.", "It spreads to my jaw."],
            }
        )
    )


def test_draft_scenario_offline_and_with_a_model_and_run_refuses_drafts(
    imported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "drafts"
    assert (
        cli("draft-scenario", imported, "--conversation", "real-001", "--out", folder / "offline.yaml") == 0
    )
    offline = yaml.safe_load((folder / "offline.yaml").read_text())
    assert offline["draft"] is True and offline["expected"] == {}
    assert "Spreading to my jaw." in offline["facts"] and "Im 58." in offline["facts"]
    assert (
        cli("draft-scenario", imported, "--conversation", "real-001", "--out", folder / "offline.yaml") == 2
    )
    with FakeLLMServer(_draft_responder) as server:
        suite = tmp_path / "providers.yaml"
        suite.write_text(
            f"bot: {{type: python, factory: 'examples.triage_bot:make_bot'}}\n"
            f"providers: {{openai: {{base_url: '{server.openai_base_url}', api_key_env: FAKE_KEY}}}}\n"
        )
        monkeypatch.setenv("FAKE_KEY", "test-key")
        assert (
            cli(
                "draft-scenario",
                imported,
                "--conversation",
                "real-001#0",
                "--model",
                "openai:fake",
                "--suite",
                suite,
                "--out",
                folder / "llm.yaml",
            )
            == 0
        )
    drafted = yaml.safe_load((folder / "llm.yaml").read_text())
    assert drafted["persona"] == "A 58-year-old man who writes tersely." and drafted["draft"] is True
    assert cli("validate", folder / "offline.yaml") == 0
    assert "1 scenario: ok (1 draft: `run` refuses them until reviewed)" in capsys.readouterr().out
    (folder / "offline.yaml").unlink()
    run_suite = folder / "suite.yaml"
    run_suite.write_text(
        "bot: {type: python, factory: 'examples.triage_bot:make_bot'}\nuser: {model: offline}\nscenarios: {paths: ['.']}\n"
    )
    capsys.readouterr()
    assert cli("run", run_suite, "--out", tmp_path / "r1", "--no-progress") == 2
    err = capsys.readouterr().err
    assert "llm.yaml" in err and "draft-real-001" in err and "--include-drafts" in err
    assert not (tmp_path / "r1").exists()
    assert cli("run", run_suite, "--out", tmp_path / "r2", "--no-progress", "--include-drafts") == 0


def _turns(folder: Path) -> dict[str, list[tuple[str, list[str]]]]:
    return {
        r.scenario_id: [(t.role, t.messages) for t in r.turns] for r in RunFolder.open(folder).conversations()
    }


def test_export_otel_reimported_gives_the_same_transcripts(tmp_path: Path) -> None:
    require("opentelemetry.sdk")
    sim = tmp_path / "sim"
    assert cli("run", SUITE, "--runs", "1", "--out", sim, "--no-progress") == 0
    assert cli("export-otel", sim, "--out", tmp_path / "otel.json") == 0
    assert cli("import", tmp_path / "otel.json", "--out", tmp_path / "back", "--no-redact") == 0
    # The round trip keeps every conversation id (labels and comparisons line up), and each bot turn
    # its latency, from its span's duration (issue 30, item 21).
    assert _turns(tmp_path / "back") == _turns(sim)
    original = {r.id: r for r in RunFolder.open(sim).conversations()}
    back = {r.id: r for r in RunFolder.open(tmp_path / "back").conversations()}
    assert sorted(back) == sorted(original)
    for cid, record in back.items():
        bots = [t.latency_s for t in record.turns if t.role == "bot"]
        wanted = [t.latency_s for t in original[cid].turns if t.role == "bot"]
        assert bots == pytest.approx(wanted, abs=1e-3) and all(b > 0 for b in bots)
    doc = json.loads((tmp_path / "otel.json").read_text())
    events = [
        e
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
        for e in s.get("events", [])
    ]
    evaluation = [e for e in events if e["name"] == "gen_ai.evaluation.result"]
    names = [
        next(iter(a["value"].values()))
        for e in evaluation
        for a in e["attributes"]
        if a["key"] == "gen_ai.evaluation.name"
    ]
    # One outcome check per conversation (LLM criteria were not judged), plus the simulated user's checks.
    assert sum(1 for n in names if n == "outcome.triage_level") == 22
    assert all(n == "outcome.triage_level" or n.startswith("fidelity.") for n in names)
    first = next(e for e in evaluation if "outcome.triage_level" in str(e["attributes"]))
    attrs = {a["key"]: next(iter(a["value"].values())) for a in first["attributes"]}
    assert attrs["gen_ai.evaluation.name"] == "outcome.triage_level"
    assert attrs["gen_ai.evaluation.score.label"] in ("pass", "fail")
    assert "Evidence: " in attrs["gen_ai.evaluation.explanation"]


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[bytes]]]:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    _Receiver.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", _Receiver.bodies
    server.shutdown()
    server.server_close()


def test_export_otel_to_an_otlp_http_endpoint(
    imported: Path, tmp_path: Path, receiver: tuple[str, list[bytes]]
) -> None:
    require("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from simulator.traces.otlp_json import request_to_json

    url, bodies = receiver
    assert cli("judge", imported, "--suite", SUITE) == 0
    assert cli("export-otel", imported, "--endpoint", url) == 0
    assert bodies, "the collector received nothing"
    received = tmp_path / "received.jsonl"
    received.write_text(
        "".join(json.dumps(request_to_json(ExportTraceServiceRequest.FromString(b))) + "\n" for b in bodies)
    )
    assert cli("import", received, "--out", tmp_path / "back", "--no-redact") == 0
    assert _turns(tmp_path / "back") == _turns(imported)  # ids kept through the round trip


def test_export_to_an_endpoint_nobody_listens_on_is_a_clear_error(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require("opentelemetry.exporter.otlp.proto.http")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert cli("export-otel", imported, "--endpoint", f"http://127.0.0.1:{port}") == 2
    assert "did not accept the spans" in capsys.readouterr().err


@pytest.mark.parametrize("user_model", ["real", "human:Dr Ada"])
def test_real_people_get_no_simulated_user_checks(
    imported: Path, user_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, item 20: the fidelity checks audit a simulation; a real conversation has none to audit."""
    from simulator.config.suite import load_suite
    from simulator.engine.roles import make_auditor
    from simulator.providers.hub import ModelHub

    suite = load_suite(SUITE)
    assert make_auditor(suite, ModelHub(), user_model) is None
    assert cli("judge", imported, "--suite", SUITE) == 0
    names = {v.criterion_id for v in RunFolder.open(imported).verdicts()}
    assert "outcome.triage_level" in names and not any(n.startswith("fidelity.") for n in names)
