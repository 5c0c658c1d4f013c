"""Conversation ids sent to a session-keeping HTTP bot are unique per run (issue 11, item 3): two runs, and a
resumed re-run of errors, against one long-lived example bot server never reach an old session."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.http_triage_bot import make_server
from simulator.cli import main
from simulator.record.folder import RunFolder, latest_by_id

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bot_server() -> Iterator[Any]:
    server = make_server("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def _suite(tmp_path: Path, port: int) -> Path:
    scenarios = ROOT / "scenarios" / "triage"
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        f"scenarios: {{paths: ['{scenarios}']}}\nbot: {{type: http, url: 'http://127.0.0.1:{port}/chat'}}\n"
        "user: {model: offline}\nruns: 2\nconcurrency: 3\n"
        "outcome: {key: triage_level, levels: [self_care, gp, urgent, emergency], critical: emergency}\n"
    )
    return suite


def test_two_runs_never_share_a_bot_conversation(tmp_path: Path, bot_server: Any) -> None:
    suite = _suite(tmp_path, bot_server.server_address[1])
    sent: list[str] = []
    outcomes = []
    for name in ("a", "b", "c"):
        out = tmp_path / name
        argv = ["run", str(suite), "--out", str(out), "--no-progress", "--tags", "cardiac,allergy"]
        assert main(argv) == 0
        records = list(latest_by_id(RunFolder.open(out).conversations()).values())
        assert records and all(r.error is None for r in records)
        ids = [r.bot_conversation_id or "" for r in records]
        assert all(i.startswith(f"{name}/") for i in ids)
        sent += ids
        outcomes.append(sorted((r.id, str(r.final_state)) for r in records))
    assert len(set(sent)) == len(sent)  # no id sent twice, across three runs
    assert set(bot_server.sessions._conversations) == set(sent)  # the bot saw exactly these sessions
    assert outcomes[0] == outcomes[1] == outcomes[2]  # fresh sessions: the same seeded conversations
