"""No configured secret is ever written (issue 11, item 4): a bot that echoes every request header (and a
leaked API key) in its replies, its state, its error bodies and its non-JSON answers, with secrets of several
shapes; nothing in the run folder, the run's output, or any report holds one."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.secrets import REDACTED
from simulator.record.folder import RunFolder, dump_line
from simulator.record.models import Label
from simulator.record.redact import forget_secrets, redact, register_secrets

# Shapes: a plain token, one with JSON-special characters, non-ASCII, and one long enough that an error body
# cut at 200 characters would cut it in the middle.
SHAPES = {
    "token": "tok-9f8e7d6c5b4a",
    "json-special": 'p@ss"w\\rd/{x}',
    "unicode": "clé-secrète-✓-42",
    "long": "L" + "0123456789abcdef" * 20,
}


class _EchoBot(BaseHTTPRequestHandler):
    """Echoes its request headers (and a leaked API key) everywhere a bot's words are recorded."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = dict(self.headers.items())
        leaked = os.environ.get("SIMULATOR_TEST_PROVIDER_KEY", "")
        echo = f"padding {'x' * 150} headers: {json.dumps(headers)} key: {leaked}"
        if "#1/" in body["conversation_id"] and body["turn"] == 1:
            self._send(500, json.dumps({"error": echo}).encode())  # an error body
        elif "#2/" in body["conversation_id"] and body["turn"] == 1:
            self._send(200, echo.encode())  # not JSON
        elif body["turn"] == 0:
            self._send(200, json.dumps({"message": f"Hello. {echo}", "state": {"seen": headers}}).encode())
        else:
            answer = {
                "message": f"Call 999. {leaked}",
                "closed": True,
                "state": {"triage_level": "emergency"},
            }
            self._send(200, json.dumps(answer).encode())

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_echoed_secrets_never_reach_a_file_or_the_terminal(
    suite_dir: Path,
    tmp_path: Path,
    shape: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    secret = SHAPES[shape] if SHAPES[shape].isascii() else "ascii-token-0042"  # headers are ASCII
    literal = f"literal-{shape}-value"
    provider_key = f"{SHAPES[shape]}-provider-key"
    monkeypatch.setenv("BOT_TOKEN", secret)
    monkeypatch.setenv("SIMULATOR_TEST_PROVIDER_KEY", provider_key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoBot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    suite = suite_dir / "suite.yaml"
    suite.write_text(
        f"name: echo\nbot:\n  type: http\n  url: http://127.0.0.1:{server.server_port}/chat\n"
        f'  headers: {{Authorization: "Bearer ${{BOT_TOKEN}}", X-Api-Key: "{literal}"}}\n'
        "user: {model: offline}\nruns: 3\nproviders:\n  openai: {api_key_env: SIMULATOR_TEST_PROVIDER_KEY}\n"
    )
    out = tmp_path / "run"
    reports = tmp_path / "reports"
    reports.mkdir()
    try:
        assert main(["run", str(suite), "--out", str(out), "--no-progress"]) == 0
        argv = ["report", str(out), "--html", str(reports / "r.html"), "--json", str(reports / "r.json")]
        assert main([*argv, "--junit", str(reports / "r.xml"), "--json-transcripts"]) == 0
        assert main(["show", str(out)]) == 0
        assert main(["show", str(out), "--raw"]) == 0
    finally:
        server.shutdown()
    records = {r.id: r for r in RunFolder.open(out).conversations()}
    assert records["chest-1#1"].error is not None and records["chest-1#1"].error.kind == "http_status"
    assert records["chest-1#2"].error is not None and records["chest-1#2"].error.kind == "invalid_reply"
    assert REDACTED in records["chest-1#0"].turns[1].messages[0]  # the echo was recorded, redacted
    written = [p.read_bytes().decode() for d in (out, reports) for p in d.iterdir()]
    printed = capsys.readouterr()
    for text in (*written, printed.out, printed.err):
        for value in (secret, literal, provider_key, json.dumps(secret)[1:-1], secret[:40]):
            assert value not in text


def test_redaction_keeps_json_valid_and_covers_keys() -> None:
    register_secrets(SHAPES.values())
    try:
        label = Label(
            labelled_at=datetime.now(UTC),
            conversation_id=f"c#{SHAPES['json-special']}",
            criterion_id="x",
            label="pass",
            labeller=SHAPES["unicode"],
            note=json.dumps({SHAPES["token"]: SHAPES["long"]}),
        )
        line = dump_line(label)
        parsed = json.loads(line)
        assert parsed["conversation_id"] == f"c#{REDACTED}" and parsed["labeller"] == REDACTED
        assert not any(s in line for s in SHAPES.values())
        assert redact({SHAPES["token"]: [SHAPES["token"], 3, None]}) == {REDACTED: [REDACTED, 3, None]}
    finally:
        forget_secrets()
    assert redact(SHAPES["token"]) == SHAPES["token"]


def test_a_non_ascii_header_is_a_user_error_that_never_quotes_it(
    suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOT_TOKEN", SHAPES["unicode"])
    suite = suite_dir / "suite.yaml"
    for headers in ('{Authorization: "Bearer ${BOT_TOKEN}"}', '{X-Key: "clé-littérale"}'):
        suite.write_text(
            f"bot: {{type: http, url: 'http://127.0.0.1:9/x', headers: {headers}}}\nuser: {{model: offline}}\n"
        )
        assert main(["run", str(suite), "--out", str(tmp_path / "x"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert "HTTP headers must be ASCII" in err and "clé" not in err and "Traceback" not in err
