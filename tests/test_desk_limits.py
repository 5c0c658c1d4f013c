"""The desk's edges (issue 30, item 17): an Origin must match in scheme as well as host and port; a request
body is capped while it streams in (413 before it is read in full); a talk nobody ends is expired and its
run folder does not stay `running`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.record.folder import RunFolder
from simulator.serve.bodylimit import MAX_BODY_BYTES
from simulator.testing.fake_llm import FakeLLMServer
from tests.desk_support import DeskFolders, csrf, desk_client, make_desk_folders, talk_folder
from tests.fake_judge import FakeJudge


@pytest.fixture
def folders(tmp_path: Path) -> DeskFolders:
    return make_desk_folders(tmp_path)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1", True),
        ("https://127.0.0.1", False),
        ("http://127.0.0.1:8080", False),
        ("ws://127.0.0.1", False),
        ("http://evil.example", False),
    ],
)
def test_an_origin_must_match_scheme_host_and_port(folders: DeskFolders, origin: str, allowed: bool) -> None:
    client = desk_client(folders)
    token = csrf(client)
    response = client.post(
        "/label",
        data={"csrf": token},
        headers={"Origin": origin},
    )
    assert (response.status_code != 403) is allowed, (response.status_code, response.text[:200])
    if not allowed:
        assert "another site" in response.text


def _chunks(total: int, size: int = 65536) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        sent += size
        yield b"a" * size


@pytest.mark.parametrize("how", ["declared", "chunked"])
def test_a_large_body_is_refused_while_it_streams(folders: DeskFolders, how: str) -> None:
    client = desk_client(folders)
    token = csrf(client)
    headers = {"X-CSRF-Token": token, "Content-Type": "application/x-www-form-urlencoded"}
    total = MAX_BODY_BYTES * 5
    body = _chunks(total)
    if how == "declared":
        headers["Content-Length"] = str(total)
        body = _chunks(MAX_BODY_BYTES // 2)  # what it says is enough to refuse it
    response = client.post("/label", content=body, headers=headers)
    assert response.status_code == 413 and "larger than" in response.text


def test_a_small_form_still_works(folders: DeskFolders) -> None:
    client = desk_client(folders)
    token = csrf(client)
    response = client.post("/label", data={"csrf": token})
    assert response.status_code not in (403, 413)


async def test_an_abandoned_talk_is_expired_and_its_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_JUDGE_KEY", "test-key")
    async with FakeLLMServer(FakeJudge()) as server:
        scenarios = talk_folder(tmp_path / "project", server.base_url)
        runs = tmp_path / "runs"
        runs.mkdir()
        from simulator.serve.talks import TalkDesk

        desk = TalkDesk(runs, idle_s=0.2)
        talk = await desk.start(scenarios / "suite.yaml", "chest-pain", "Dr Ada")
        await desk.say(talk, "My chest hurts")
        deadline = time.monotonic() + 30
        while not talk.ended and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # the desk's own sweeper expires it
        assert talk.ended and talk.abandoned
        await desk.end(talk)
    manifest = RunFolder.open(talk.folder).read_manifest()
    assert manifest.status == "complete"
    assert [r.stop_reason for r in RunFolder.open(talk.folder).conversations()]
