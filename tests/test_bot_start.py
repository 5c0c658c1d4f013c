"""`bot.start`: the engine starts a service bot for the run, waits until it is ready, stops it cleanly and
keeps its output (secrets redacted); a bot that dies or never gets ready is one clear error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simulator.bots.http_bot import HttpBotFactory
from simulator.bots.service import BotProcess, placeholder_values
from simulator.config.bots import BotStart, HttpBotConfig
from simulator.errors import UserError
from simulator.record.redact import forget_secrets, register_secrets

ROOT = Path(__file__).resolve().parent.parent

# Listens on the port, says so, and (with IGNORE_TERM) shrugs off SIGTERM.
# It says what it will do before its port answers: the engine stops it as soon as the port answers, so a line
# printed after `listen()` could be cut off by that stop on a busy machine (it never got written: nothing lost).
LISTENER = """
import os, signal, socket, sys, time
if os.environ.get("IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("listening; token is", os.environ.get("SECRET_TOKEN"), flush=True)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
time.sleep(60)
"""


def _process(tmp_path: Path, command: list[str], **start: object) -> BotProcess:
    values = placeholder_values(started=True)
    config = BotStart(command=command, **start)  # type: ignore[arg-type]
    return BotProcess(config, ROOT, values, f"http://127.0.0.1:{values['port']}/")


async def test_an_http_bot_is_started_used_and_stopped_with_its_log_kept(tmp_path: Path) -> None:
    config = HttpBotConfig(
        url="http://127.0.0.1:{port}/chat",
        start=BotStart(
            command=["{python}", "-m", "examples.http_triage_bot", "--port", "{port}"], cwd=str(ROOT)
        ),
    )
    factory = HttpBotFactory(config, tmp_path)
    assert "{port}" not in factory.url and factory.process is not None
    assert factory.process.command[0] == sys.executable
    await factory.start(tmp_path)
    session = await factory.open("run/a#0/1")
    reply = await session.send("I have a rash on my arm", 0)
    assert reply.messages  # the started bot answered
    await factory.aclose()
    log = (tmp_path / "bot.log").read_text()
    assert "starting:" in log and "-m examples.http_triage_bot" in log
    # Stopped by the engine, and the stop is in the log.
    assert "--- the bot process was killed by SIGTERM (exit code -15)" in log
    assert factory.process.exit_code() is None  # nothing left running (the process is forgotten)


async def test_a_bot_that_exits_before_it_is_ready_is_one_error_with_its_log(tmp_path: Path) -> None:
    script = "import sys; print('boom: no database configured', flush=True); sys.exit(3)"
    process = _process(tmp_path, ["{python}", "-c", script])
    with pytest.raises(UserError) as caught:
        await process.start(tmp_path)
    message = str(caught.value)
    assert "exited with code 3 before it was ready" in message
    assert "boom: no database configured" in message and sys.executable in message
    assert "bot.log" in message


async def test_a_bot_that_never_gets_ready_is_stopped_and_named(tmp_path: Path) -> None:
    process = _process(
        tmp_path,
        ["{python}", "-c", "import time; print('warming up', flush=True); time.sleep(30)"],
        ready={"timeout_s": 0.5},
    )
    with pytest.raises(UserError, match=r"was not ready within 0\.5 s \(port \d+ did not answer") as caught:
        await process.start(tmp_path)
    assert "warming up" in str(caught.value)
    assert "the bot process was killed by SIGTERM (exit code -15)" in (tmp_path / "bot.log").read_text()


async def test_a_bot_ignoring_sigterm_is_killed_after_stop_timeout(tmp_path: Path) -> None:
    process = _process(
        tmp_path, ["{python}", "-c", LISTENER, "{port}"], env={"IGNORE_TERM": "1"}, stop_timeout_s=0.3
    )
    await process.start(tmp_path)
    await process.stop()
    assert "the bot process was killed by SIGKILL (exit code -9)" in (tmp_path / "bot.log").read_text()


async def test_the_bots_output_is_kept_with_secrets_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_BOT_TOKEN", "tok-very-secret-1")
    register_secrets(["tok-very-secret-1"])
    try:
        process = _process(
            tmp_path, ["{python}", "-c", LISTENER, "{port}"], env={"SECRET_TOKEN": "${MY_BOT_TOKEN}"}
        )
        await process.start(tmp_path)
        await process.stop()
    finally:
        forget_secrets()
    log = (tmp_path / "bot.log").read_text()
    assert "listening; token is [redacted]" in log and "tok-very-secret-1" not in log


def test_placeholders_without_a_start_and_unset_variables_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UserError, match=r"bot.url uses \{port\}.*needs bot.start"):
        HttpBotFactory(HttpBotConfig(url="http://127.0.0.1:{port}/chat"), tmp_path)
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(UserError, match=r"bot\.start\.env\.KEY uses \$\{NOT_SET_ANYWHERE\}"):
        _process(tmp_path, ["true"], env={"KEY": "${NOT_SET_ANYWHERE}"})


async def test_a_failed_start_is_the_same_bot_error_for_every_conversation_and_runs_once(
    tmp_path: Path,
) -> None:
    from simulator.bots.base import BotError

    script = "import sys; print('cannot bind', flush=True); sys.exit(1)"
    config = HttpBotConfig(
        url="http://127.0.0.1:{port}/chat", start=BotStart(command=["{python}", "-c", script])
    )
    factory = HttpBotFactory(config, tmp_path)
    errors = []
    for conversation in ("run/a#0/1", "run/a#1/1"):
        with pytest.raises(BotError) as caught:
            await factory.open(conversation)
        errors.append(caught.value)
    await factory.aclose()
    assert [e.kind for e in errors] == ["start", "start"] and str(errors[0]) == str(errors[1])
    assert "exited with code 1" in str(errors[0]) and "cannot bind" in str(errors[0])
    assert factory.process is not None and factory.process.log_path is not None
    assert factory.process.log_path.read_text().count("starting:") == 1


# Listens on the port; on the first request it says so and dies as END says (before it answers).
DYING = """
import asyncio, os, signal, sys
async def handle(reader, writer):
    await reader.readuntil(b"\\r\\n\\r\\n")
    print("dying:", os.environ["END"], flush=True)
    if os.environ["END"] == "exit":
        os._exit(3)
    os.kill(os.getpid(), signal.SIGKILL)
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("end", "says"), [("exit", "exited with code 3"), ("sigkill", "was killed by SIGKILL")]
)
async def test_an_http_bot_that_dies_mid_conversation_is_an_error_with_its_exit_and_log(
    end: str, says: str, tmp_path: Path
) -> None:
    from simulator.bots.base import BotError

    start = BotStart(command=["{python}", "-c", DYING, "{port}"], env={"END": end})
    factory = HttpBotFactory(HttpBotConfig(url="http://127.0.0.1:{port}/chat", start=start), tmp_path)
    await factory.start(tmp_path)
    session = await factory.open("run/a#0/1")
    try:
        with pytest.raises(BotError) as caught:
            await session.send("I have chest pain", 0)
    finally:
        await factory.aclose()
    message = str(caught.value)
    assert caught.value.kind == "connection"
    # Its exit, what that means and the end of its log, not the HTTP client's "Server disconnected".
    assert says in message and f"dying: {end}" in message and "neither judged nor counted" in message


async def test_an_http_bot_that_drops_the_connection_is_said_in_words(tmp_path: Path) -> None:
    import asyncio

    from simulator.bots.base import BotError

    async def drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(drop, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    factory = HttpBotFactory(HttpBotConfig(url=f"http://127.0.0.1:{port}/chat"), tmp_path)
    async with server:
        session = await factory.open("run/a#0/1")
        with pytest.raises(BotError, match="closed or reset the connection without answering") as caught:
            await session.send("I have chest pain", 0)
        await factory.aclose()
    assert caught.value.kind == "connection" and "fix the bot" in str(caught.value)
