"""`simulator run` end to end with the offline user: the run folder, manifest, show, and user mistakes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from simulator.cli import main
from simulator.record.folder import RunFolder

ROOT = Path(__file__).resolve().parent.parent


def test_run_writes_manifest_and_one_conversation_per_item(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--no-progress"]) == 0
    folder = RunFolder.open(out)
    manifest = folder.read_manifest()
    assert manifest.status == "complete" and manifest.planned == 3
    assert manifest.models.user == "offline"
    assert (manifest.scenarios[0].sha256 or "").startswith("sha256:")
    assert manifest.scenarios[0].expected == {"triage_level": "emergency"}
    assert manifest.scenarios[0].tags == ["cardiac", "high-stakes"]
    assert manifest.prompts["user"].hash.startswith("sha256:")
    records = list(folder.conversations())
    assert sorted(r.id for r in records) == ["chest-1#0", "chest-1#1", "chest-1#2"]
    assert all(r.stop_reason == "user_done" for r in records)
    verdicts = list(folder.verdicts())
    assert {v.criterion_id for v in verdicts} >= {"outcome.triage_level"}
    assert "3 conversations (user_done=3)" in capsys.readouterr().out

    assert main(["show", str(out), "--scenario", "chest-1", "--repeat", "0"]) == 0
    shown = capsys.readouterr().out
    assert "stop reason: user_done" in shown and "How old are you?" in shown


def test_cli_overrides_runs_and_tags(suite_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert (
        main(["run", str(suite_dir / "suite.yaml"), "--out", str(out), "--runs", "1", "--no-progress"]) == 0
    )
    assert len(list(RunFolder.open(out).conversations())) == 1
    assert main(["run", str(suite_dir / "suite.yaml"), "--out", str(tmp_path / "r2"), "--tags", "neuro"]) == 2


def test_bad_suite_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("bot: {type: python, factory: 'x:y'}\nrunz: 3\n")
    assert main(["run", str(suite)]) == 2
    err = capsys.readouterr().err
    assert f"{suite}:2 [runz]: unknown key 'runz'; did you mean 'runs'?" in err


def test_missing_bot_module_is_a_user_error(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_dir / "suite.yaml"
    suite.write_text(suite.read_text().replace(":make", "_missing:make").replace("scripted_bot", "nobot"))
    assert main(["run", str(suite), "--out", str(tmp_path / "x")]) == 2
    assert "cannot import module" in capsys.readouterr().err


def test_missing_api_key_names_the_variable(
    suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(
        [
            "run",
            str(suite_dir / "suite.yaml"),
            "--out",
            str(tmp_path / "x"),
            "--user-model",
            "anthropic:claude-sonnet-4-5",
        ]
    )
    assert code == 2
    assert "set the ANTHROPIC_API_KEY environment variable" in capsys.readouterr().err


class _BotHandler(BaseHTTPRequestHandler):
    seen_auth: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen_auth.append(self.headers.get("Authorization", ""))
        if body["turn"] == 0:
            answer = {"messages": ["Hi.", "Does the pain spread to your arm?"]}
        else:
            answer = {"message": "Call 999 now.", "state": {"triage_level": "emergency"}, "closed": True}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


def test_http_bot_with_env_header_never_recorded(
    suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BotHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    secret = "s3cret-token-value-123"
    monkeypatch.setenv("BOT_TOKEN", secret)
    suite = suite_dir / "suite.yaml"
    suite.write_text(
        textwrap.dedent(f"""
        name: http
        scenarios: {{paths: ["."]}}
        bot:
          type: http
          url: http://127.0.0.1:{server.server_port}/chat
          headers: {{Authorization: "Bearer ${{BOT_TOKEN}}", X-Literal: "hardcoded-secret"}}
        user: {{model: offline}}
        runs: 2
    """)
    )
    out = tmp_path / "run"
    try:
        assert main(["run", str(suite), "--out", str(out), "--no-progress"]) == 0
    finally:
        server.shutdown()
    assert _BotHandler.seen_auth[-1] == f"Bearer {secret}"
    records = list(RunFolder.open(out).conversations())
    assert {r.stop_reason for r in records} == {"bot_closed"}
    assert records[0].final_state == {"triage_level": "emergency"}
    assert records[0].turns[1].messages == ["Hi.", "Does the pain spread to your arm?"]
    everything = "".join(p.read_text() for p in out.iterdir())
    assert secret not in everything and "hardcoded-secret" not in everything
    assert "${BOT_TOKEN}" in (out / "manifest.json").read_text()


def test_missing_header_variable_is_a_user_error(
    suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    suite = suite_dir / "suite.yaml"
    suite.write_text(
        'bot: {type: http, url: "http://127.0.0.1:9/x", headers: {A: "${NOPE_TOKEN}"}}\nuser: {model: offline}\n'
    )
    assert main(["run", str(suite), "--out", str(tmp_path / "x")]) == 2
    assert "set the NOPE_TOKEN environment variable" in capsys.readouterr().err


def test_ctrl_c_exits_130_and_keeps_finished_work(suite_dir: Path, tmp_path: Path, bot_module: str) -> None:
    slow = suite_dir / f"{bot_module}_slow.py"
    slow.write_text(
        "import time\nclass B:\n    def send(self, t):\n        time.sleep(0.05)\n        return 'How long has it hurt?'\ndef make():\n    return B()\n"
    )
    suite = suite_dir / "suite.yaml"
    suite.write_text(
        suite.read_text()
        .replace(f"{bot_module}:make", f"{bot_module}_slow:make")
        .replace("runs: 3", "runs: 200")
    )
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{suite_dir}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "run", str(suite), "--out", str(out), "--no-progress"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        conversations = out / "conversations.jsonl"
        if conversations.exists() and conversations.read_text().count("\n") >= 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    folder = RunFolder.open(out)
    assert folder.read_manifest().status == "interrupted"
    assert len(list(folder.conversations())) >= 2
