"""Issue 43, class 8: the hint fits the cause. A hazard log (or any single YAML file a flag names) that is
a folder, a FIFO or a symlink loop is read and refused for what it is, not called missing; a bot answering
a redirect is told so, not "not JSON"."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from simulator.bots.base import BotError
from simulator.bots.http_bot import HttpSession
from simulator.errors import UserError
from simulator.safety.hazards import load_hazard_log
from simulator.traces.redact import load_redactor


def _make(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "hazards.yaml"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink loop":
        (tmp_path / "other.yaml").symlink_to(path)
        path.symlink_to(tmp_path / "other.yaml")
    elif kind == "link to a folder":
        (tmp_path / "real").mkdir()
        path.symlink_to(tmp_path / "real")
    return path


CASES = {
    "folder": "a folder, not a regular file",
    "fifo": "a named pipe (FIFO)",
    "symlink loop": "link loop",
    "link to a folder": "a folder, not a regular file",
    "missing": "no such",
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_hazard_log_that_is_not_a_file_is_refused_for_what_it_is(tmp_path: Path, kind: str) -> None:
    path = _make(tmp_path, kind)
    with pytest.raises(UserError) as caught:
        load_hazard_log(path)
    assert CASES[kind] in caught.value.render()


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_flag_file_that_is_not_a_file_is_refused_for_what_it_is(tmp_path: Path, kind: str) -> None:
    path = _make(tmp_path, kind)
    with pytest.raises(UserError) as caught:
        load_redactor(path)
    assert CASES[kind] in caught.value.render()


async def _redirecting(status: int) -> AsyncIterator[str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(
            b"HTTP/1.1 %d Moved\r\nLocation: http://elsewhere/chat\r\nContent-Length: 0\r\n\r\n" % status
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_bot_answering_a_redirect_is_told_so(status: int) -> None:
    async for url in _redirecting(status):
        async with httpx.AsyncClient(timeout=5.0) as client:
            session = HttpSession(client, f"{url}/chat", "c#0", timeout_s=5, max_bytes=1_000_000)
            with pytest.raises(BotError) as caught:
                await session.send("hello", 1)
    assert f"HTTP {status}, a redirect" in str(caught.value) and "not JSON" not in str(caught.value)


KMSG = Path("/proc/kmsg")


@pytest.mark.skipif(not os.access(KMSG, os.R_OK), reason="needs a readable /proc/kmsg (Linux, as root)")
@pytest.mark.parametrize("command", ["validate", "import"])
def test_a_kernel_file_that_waits_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """/proc/kmsg says it is a regular file and then waits for the kernel (or, once the kernel has logged,
    hands out its messages, consumed by the read): refused by its file system before a byte is read."""
    from simulator.cli import main

    link = tmp_path / ("scenario.yaml" if command == "validate" else "export.jsonl")
    link.symlink_to(KMSG)
    argv = [command, str(link)] + (["--out", str(tmp_path / "out")] if command == "import" else [])
    assert main(argv) == 2
    assert "a kernel file (under /proc or /sys" in capsys.readouterr().err
