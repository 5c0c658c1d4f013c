"""Every server the user points at an address says, when it cannot listen there, one line naming host:port,
what is wrong and the fix, and exits 2 (a user error), never uvicorn's "[Errno 98]" and exit 1 or a traceback:
`simulator serve` (the review desk), `simulator collect` and the fake LLM server's command line, with a port
another program holds, an address that is not this machine's, a name that is no host name, a port past
65535. `--port 0`, the fix each names, listens on a free port and prints it. A bot the suite starts
(`bot.start`) on a port another program holds is refused before it starts, naming the suite's field."""

from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.errors import UserError
from simulator.record.redact import forget_secrets
from simulator.testing.fake_llm import FakeLLMServer
from tests.support.ports import held_port

ROOT = Path(__file__).resolve().parent.parent

# Each command that listens, as a user runs it (a folder of its own to write in).
COMMANDS: dict[str, list[str]] = {
    "serve": [sys.executable, "-m", "simulator", "serve", "runs"],
    "collect": [sys.executable, "-m", "simulator", "collect", "--out", "live"],
    "fake_server": [sys.executable, "-m", "simulator.testing.fake_server"],
}


def _run(command: str, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMANDS[command], *flags],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,  # a server that started would serve for ever: this fails the test instead
    )


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    err = done.stderr
    assert done.returncode == 2, (done.returncode, err)  # the user-error exit, not uvicorn's 1
    assert "Traceback" not in err and "Errno" not in err, err
    assert err.startswith("error: cannot listen on ") and err.count("\n") == 1, err
    return err.strip()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_port_another_program_holds_is_one_line_with_the_fix(command: str, tmp_path: Path) -> None:
    with held_port() as port:
        line = _one_error_line(_run(command, tmp_path, "--port", str(port)))
    assert line == (
        f"error: cannot listen on 127.0.0.1:{port}: port {port} is already in use by another program; "
        f"stop it, or choose another port: --port {port + 1}, or --port 0 for any free one"
    )


HOSTS = {
    # A documentation address (TEST-NET-3): no machine's own, so the system cannot bind it.
    "not this machine's address": ("203.0.113.7", "203.0.113.7 is not an address of this machine"),
    # Refused before any lookup (an empty part), so no name server is asked.
    "no host name": ("bad..host", "'bad..host' is not a host name this machine knows"),
}


@pytest.mark.parametrize("case", sorted(HOSTS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_host_that_cannot_be_bound_is_one_line_with_the_fix(
    command: str, case: str, tmp_path: Path
) -> None:
    host, says = HOSTS[case]
    line = _one_error_line(_run(command, tmp_path, "--host", host, "--port", "8765"))
    assert line.startswith(f"error: cannot listen on {host}:8765: {says}"), line
    assert line.endswith("--host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every network interface)")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_port_past_65535_is_one_line_with_the_fix(command: str, tmp_path: Path) -> None:
    line = _one_error_line(_run(command, tmp_path, "--port", "70000"))
    assert "70000 is not a port number; use one from 1 to 65535: --port 8000, or --port 0" in line


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_port_0_the_fix_offered_listens_on_a_free_port_and_says_which(command: str, tmp_path: Path) -> None:
    server = subprocess.Popen(
        [*COMMANDS[command], "--port", "0"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        assert found, (first, server.stderr.read() if server.poll() is not None and server.stderr else "")
        port = int(found.group(1))
        assert port != 0
        socket.create_connection(("127.0.0.1", port), timeout=10).close()  # it listens where it says
    finally:
        server.terminate()
        server.communicate(timeout=60)


@pytest.mark.parametrize(
    ("error", "port", "says"),
    [
        (
            PermissionError(errno.EACCES, "Permission denied"),
            80,
            "ports below 1024 need administrator rights",
        ),
        (PermissionError(errno.EACCES, "Permission denied"), 8080, "not allowed to listen there"),
        (OSError(errno.EADDRINUSE, "Address already in use"), 8080, "port 8080 is already in use"),
        (
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            8080,
            "(Name or service not known)",
        ),
    ],
    ids=["below-1024", "permission", "in-use", "unknown-name"],
)
def test_each_reason_a_bind_fails_is_said_with_its_own_fix(error: OSError, port: int, says: str) -> None:
    """The reasons no test machine can produce on demand (a port below 1024 is root's; root runs the tests
    here), said from the error the system raises."""
    from simulator.listening import _problem

    said = _problem(error, "somehost", port, "--port {0}", "--host {0}")
    assert says in said, said
    fix = "--port 8080, or --port 0 for any free one" if port == 80 else "--port 8081, or --port 0"
    if not isinstance(error, socket.gaierror):
        assert fix in said, said


async def test_the_fake_server_from_python_says_the_fix_in_python_words() -> None:
    with held_port() as port:
        server = FakeLLMServer(port=port)
        with pytest.raises(UserError) as caught:
            await server.start()
        await server.stop()
    assert str(caught.value) == (
        f"cannot listen on 127.0.0.1:{port}: port {port} is already in use by another program; stop it, or "
        f"choose another port: FakeLLMServer(port={port + 1}), or FakeLLMServer(port=0) for any free one"
    )


def test_a_port_that_cannot_be_had_leaves_no_socket_open() -> None:
    """`localhost` may be two addresses: the one bound before the other failed is closed again."""
    from simulator.listening import listening_sockets

    before = len(os.listdir("/proc/self/fd"))
    with held_port() as port:
        for _ in range(20):
            with pytest.raises(UserError):
                listening_sockets("localhost", port)
    assert len(os.listdir("/proc/self/fd")) <= before + 1  # none of the 20 attempts left its socket


# ------------------------------------------------------------------------- a started bot's port, held


CHANNEL_BOTS = {  # the bot's own fields, with a fixed port; the field that sets the port
    "http": (["url: http://127.0.0.1:{port}/chat"], "bot.url"),
    "whatsapp": (["webhook_url: http://127.0.0.1:{port}/webhook", "verify: false"], "bot.webhook_url"),
    "openai_endpoint": (["base_url: http://127.0.0.1:{port}/v1", "model: team-ft"], "bot.base_url"),
    "voice": (["url: ws://127.0.0.1:{port}/ws"], "bot.url"),
}


def _suite(tmp_path: Path, channel: str, port: int, ready: bool = False) -> tuple[Path, int]:
    """A suite whose bot the run starts, on a fixed port written in its fields and its command (with
    `ready`, checked at `bot.start.ready.port`); the line that sets the port."""
    fields, _ = CHANNEL_BOTS[channel]
    (tmp_path / "s.yaml").write_text("id: s1\npersona: p\ngoal: ask for help\nmax_turns: 2\n")
    command = f'["{{python}}", "-m", "examples.http_triage_bot", "--port", "{port}"]'
    lines = [
        "scenarios: {paths: [s.yaml]}",
        "user: {model: offline}",
        "runs: 1",
        "bot:",
        f"  type: {channel}",
        *(f"  {field.format(port=port)}" for field in fields),
        "  start:",
        f"    command: {command}",
        f"    cwd: {ROOT}",
        *([f"    ready: {{port: {port}}}"] if ready else []),
    ]
    suite = tmp_path / "suite.yaml"
    suite.write_text("\n".join(lines) + "\n")
    return suite, len(lines) if ready else 6


@pytest.fixture
def _whatsapp_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN"):
        monkeypatch.delenv(name, raising=False)  # made up for a bot the run starts
    yield
    forget_secrets()


@pytest.mark.usefixtures("_whatsapp_secrets")
@pytest.mark.parametrize("channel", sorted(CHANNEL_BOTS))
async def test_a_started_bots_port_another_program_holds_names_the_suites_field(
    channel: str, tmp_path: Path
) -> None:
    """Before, the readiness check passed on the other program, the bot died on its taken port, and the run
    talked to that other program (its conversations all errors, or worse, answers)."""
    from simulator.bots import make_bot_factory
    from simulator.config.suite import load_suite
    from simulator.providers.hub import ModelHub

    _, field = CHANNEL_BOTS[channel]
    with held_port() as port:
        suite_file, line = _suite(tmp_path, channel, port)
        suite = load_suite(suite_file)
        factory: Any = make_bot_factory(suite, ModelHub({}))
        try:
            with pytest.raises(UserError) as caught:
                await factory.process.start(tmp_path)  # what each channel's start does for bot.start
        finally:
            await factory.aclose()
    said = caught.value.render()
    assert said.startswith("bot.start: another program already listens on the bot's port (1 problem):")
    assert f"{suite_file}:{line} [{field}]: 127.0.0.1:{port} answers before the bot is started" in said
    assert "stop that program, or choose another port here and in bot.start.command" in said
    assert not (tmp_path / "bot.log").exists()  # the bot was never started


def test_a_run_whose_bot_port_another_program_holds_stops_with_the_field_and_the_fix(tmp_path: Path) -> None:
    with held_port() as port:
        suite, line = _suite(tmp_path, "http", port, ready=True)
        done = subprocess.run(
            [sys.executable, "-m", "simulator", "run", str(suite), "--out", "run", "--no-progress"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "run complete" not in done.stdout
    assert f"{suite}:{line} [bot.start.ready.port]: 127.0.0.1:{port} answers before" in done.stderr
