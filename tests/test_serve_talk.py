"""Talk to the bot through the desk's routes, labels from two browsers at once, and `simulator serve`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from simulator.record.folder import RunFolder
from simulator.serve import DeskConfig, create_app
from simulator.testing.fake_llm import FakeLLMServer
from tests.desk_support import BASE, DeskFolders, csrf, desk_client, make_desk_folders, talk_folder
from tests.fake_judge import FakeJudge

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("FAKE_JUDGE_KEY", "test-key")
    with FakeLLMServer(FakeJudge()) as server:
        yield server


def _chat(client: TestClient, messages: list[str], name: str = "Dr Ada") -> tuple[str, str]:
    """Start a talk on chest-pain, send `messages`, end it; return the last chat page and the final page."""
    token = csrf(client)
    start = client.post(
        "/talk", data={"csrf": token, "suite": "suite.yaml", "scenario": "chest-pain", "name": name}
    )
    assert start.status_code == 200, start.text
    page, url = start.text, str(start.url)
    for text in messages:
        reply = client.post(f"{url}/say", data={"csrf": token, "text": text})
        assert reply.status_code == 200, reply.text
        page = reply.text
    final = client.post(f"{url}/end", data={"csrf": token})
    return page, final.text


def test_a_clinician_talks_to_the_bot_and_the_talk_is_a_judged_run(
    tmp_path: Path, judge_server: FakeLLMServer
) -> None:
    scenarios = talk_folder(tmp_path / "project", judge_server.base_url)
    runs = tmp_path / "runs"
    runs.mkdir()
    with TestClient(create_app(DeskConfig(runs, scenarios)), base_url=BASE) as client:
        picked = client.get("/talk", params={"suite": "suite.yaml", "scenario": "chest-pain"}).text
        assert "Pressure in my chest for two hours." in picked and "downplays symptoms" in picked
        chat, final = _chat(client, ["My chest <b>hurts</b>", "I am 55 and it goes to my left arm"])
    assert "Please call 999 now." in chat and "My chest &lt;b&gt;hurts&lt;/b&gt;" in chat
    (run,) = list(runs.iterdir())
    manifest = RunFolder.open(run).read_manifest()
    assert (manifest.kind, manifest.models.user, manifest.status) == (
        "simulation",
        "human:Dr Ada",
        "complete",
    )
    assert [s.id for s in manifest.scenarios] == ["chest-pain"] and manifest.planned == 1
    (record,) = list(RunFolder.open(run).conversations())
    assert record.user_model == "human:Dr Ada" and record.stop_reason == "bot_closed"
    assert [t.messages for t in record.turns if t.role == "user"] == [
        ["My chest <b>hurts</b>"],
        ["I am 55 and it goes to my left arm"],
    ]
    verdicts = {v.criterion_id: v.result for v in RunFolder.open(run).verdicts()}
    assert verdicts == {"calls-999": "pass", "outcome.triage_level": "pass"}
    assert "calls-999" in final and 'id="stop">bot_closed<' in final  # the reader of the new run


def test_ending_the_talk_before_the_bot_decides_is_user_done_and_judged(
    tmp_path: Path, judge_server: FakeLLMServer
) -> None:
    scenarios = talk_folder(tmp_path / "project", judge_server.base_url)
    runs = tmp_path / "runs"
    runs.mkdir()
    with TestClient(create_app(DeskConfig(runs, scenarios)), base_url=BASE) as client:
        _chat(client, ["chest pressure"])
    (run,) = list(runs.iterdir())
    (record,) = list(RunFolder.open(run).conversations())
    assert record.stop_reason == "user_done"
    verdicts = {v.criterion_id: v.result for v in RunFolder.open(run).verdicts()}
    assert verdicts["outcome.triage_level"] == "fail"  # no decision on an emergency
    assert verdicts["calls-999"] == "fail"


def test_a_talk_needs_a_name_and_a_suite_of_the_scenarios_folder(tmp_path: Path) -> None:
    scenarios = talk_folder(tmp_path / "project", "http://127.0.0.1:9")
    runs = tmp_path / "runs"
    runs.mkdir()
    with TestClient(create_app(DeskConfig(runs, scenarios)), base_url=BASE) as client:
        token = csrf(client)
        no_name = client.post("/talk", data={"csrf": token, "suite": "suite.yaml", "scenario": "chest-pain"})
        assert no_name.status_code == 400 and "give your name" in no_name.text
        outside = client.post(
            "/talk", data={"csrf": token, "suite": "../x/suite.yaml", "scenario": "a", "name": "x"}
        )
        assert outside.status_code == 400 and "not a suite under the scenarios folder" in outside.text
        unknown = client.post(
            "/talk", data={"csrf": token, "suite": "suite.yaml", "scenario": "nope", "name": "x"}
        )
        assert unknown.status_code == 400 and "no scenario &#39;nope&#39;" in unknown.text
        assert client.get("/talk/unknown-id").status_code == 400
    assert list(runs.iterdir()) == []


@pytest.fixture
def folders(tmp_path: Path) -> DeskFolders:
    return make_desk_folders(tmp_path)


def test_two_browsers_labelling_at_once_lose_no_label(folders: DeskFolders) -> None:
    items = [
        f"{s}#{r}"
        for s in ("chest-pain", "ankle-sprain", "rash-script", "thunderclap-headache")
        for r in range(3)
    ]

    def label(who: str) -> int:
        client = desk_client(folders)
        token = csrf(client)
        queue = f"run=tiny&labeller={who}&criterion=asks-danger-signs&sampling=all"
        saved = 0
        for _ in range(3):  # each item labelled three times: the last line is the answer
            for conversation in items:
                form = {"csrf": token, "queue": queue, "conversation": conversation,
                        "criterion_id": "asks-danger-signs", "label": "fail", "note": who * 200}  # fmt: skip
                saved += client.post("/label", data=form, follow_redirects=False).status_code == 303
        return saved

    with ThreadPoolExecutor(4) as pool:
        saved = list(pool.map(label, ["ann", "bob", "cat", "dan"]))
    assert saved == [36, 36, 36, 36]
    labels = list(RunFolder.open(folders.runs / "tiny").labels())
    assert len(labels) == 144
    for who in ("ann", "bob", "cat", "dan"):
        mine = [x for x in labels if x.labeller == who]
        assert len(mine) == 36 and all(x.note == who * 200 for x in mine)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "simulator", "serve", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, line


def _get(url: str, **kwargs: object) -> httpx.Response:
    for _ in range(100):
        try:
            return httpx.get(url, timeout=10, **kwargs)  # type: ignore[arg-type]
        except httpx.ConnectError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {url}")


def test_simulator_serve_binds_loopback_by_default(folders: DeskFolders) -> None:
    port = _free_port()
    process, line = _serve([str(folders.runs), "--judges", str(folders.judges), "--port", str(port)], {})
    try:
        assert line.startswith(f"review desk on http://127.0.0.1:{port}/ ") and "token" not in line
        page = _get(f"http://127.0.0.1:{port}/")
        assert page.status_code == 200 and 'data-run="tiny"' in page.text
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_simulator_serve_on_another_host_needs_the_token(folders: DeskFolders) -> None:
    port = _free_port()
    process, line = _serve(
        [str(folders.runs), "--host", "0.0.0.0", "--port", str(port)],
        {"SIMULATOR_DESK_TOKEN": "t0ken-from-env"},
    )
    try:
        assert "?token=<$SIMULATOR_DESK_TOKEN>" in line and "t0ken-from-env" not in line
        assert _get(f"http://127.0.0.1:{port}/").status_code == 403
        ok = _get(f"http://127.0.0.1:{port}/", headers={"Authorization": "Bearer t0ken-from-env"})
        assert ok.status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=20)
    port = _free_port()
    process, line = _serve(
        [str(folders.runs), "--host", "0.0.0.0", "--port", str(port)], {"SIMULATOR_DESK_TOKEN": ""}
    )
    try:
        token = line.split("?token=")[1].split()[0]
        assert len(token) >= 24
        assert (
            _get(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        )
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_serve_refuses_a_missing_folder(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "simulator", "serve", str(tmp_path), "--judges", str(tmp_path / "nope")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2 and f"{tmp_path / 'nope'}: no such folder" in out.stderr
    assert json.dumps(out.stderr).count("Traceback") == 0
