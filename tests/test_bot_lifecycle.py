"""A bot the suite starts lives and dies with the run: `kill -9` of the engine mid-conversation leaves nothing
running (the bot and the child it made are stopped by the watchdog), a bot that fails to start leaves no child
behind, and the secrets the engine makes up for a started bot reach `${WHATSAPP_*}` in `bot.start.env`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from simulator.bots.service import BotProcess, placeholder_values
from simulator.bots.whatsapp import WhatsAppBotFactory
from simulator.config.bots import BotStart
from simulator.config.bots.whatsapp import WhatsAppBotConfig
from simulator.errors import UserError
from simulator.record.redact import forget_secrets
from tests._live_run import child_env

# Starts a child of its own (as a web server's worker would), writes both pids, then accepts connections and
# never answers: the engine's conversation waits on it while the test kills the engine.
HANGING_BOT = textwrap.dedent(
    """
    import os, socket, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    # A daemon that leaves the bot's process group and session (as a double-forking server does).
    daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(sys.argv[1]))); server.listen()
    pids = sys.argv[2]
    with open(pids + ".tmp", "w") as out:
        out.write(f"{os.getpid()} {child.pid} {daemon.pid}")
    os.replace(pids + ".tmp", pids)
    held = []
    while True:
        connection, _ = server.accept()
        held.append(connection)
        open(pids + ".asked", "w").close()
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its reaper is gone for our purpose
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _wait_for(what: str, check: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} within {seconds:g} s")


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "SIGTERM"])
def test_the_engine_ending_mid_conversation_stops_the_started_bot_and_its_children(
    tmp_path: Path, stop: signal.Signals
) -> None:
    (tmp_path / "hanging_bot.py").write_text(HANGING_BOT)
    pids = tmp_path / "pids"
    (tmp_path / "s.yaml").write_text("id: s1\npersona: p\ngoal: ask for help\nmax_turns: 2\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            scenarios: {{paths: [s.yaml]}}
            bot:
              type: http
              url: http://127.0.0.1:{{port}}/chat
              timeout_s: 120
              start:
                command: ["{{python}}", "hanging_bot.py", "{{port}}", "{pids}"]
                stop_timeout_s: 1
            user: {{model: offline}}
            runs: 1
            """
        )
    )
    out = tmp_path / "run"
    engine = subprocess.Popen(
        [sys.executable, "-m", "simulator", "run", str(suite), "--out", str(out), "--no-progress"],
        cwd=tmp_path,
        env=child_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for("the engine's conversation reached the bot", lambda: Path(f"{pids}.asked").exists(), 60)
        started = [int(pid) for pid in pids.read_text().split()]  # the bot, its child, its daemon
        assert all(_alive(pid) for pid in started)
        engine.send_signal(stop)  # SIGKILL: no handler, no finally, no atexit runs in the engine
        engine.wait(timeout=30)
        assert engine.returncode == (-signal.SIGKILL if stop == signal.SIGKILL else 143)
        _wait_for("the bot, its child and its daemon are stopped", lambda: not any(map(_alive, started)), 20)
    finally:
        if engine.poll() is None:
            engine.kill()
        for pid in (int(p) for p in (pids.read_text().split() if pids.exists() else [])):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    log = (out / "bot.log").read_text()
    assert "hanging_bot.py" in log
    if stop == signal.SIGKILL:  # the watchdog did it
        assert "the watchdog stopped its process group" in log
    else:  # the engine stopped it on its way out
        assert "the bot process was killed by SIGTERM (exit code -15)" in log and "watchdog" not in log


async def test_a_bot_that_exits_before_it_is_ready_leaves_no_child_running(tmp_path: Path) -> None:
    script = (
        "import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"open({str(tmp_path / 'child')!r}, 'w').write(str(child.pid)); sys.exit(4)"
    )
    values = placeholder_values(started=True)
    process = BotProcess(BotStart(command=["{python}", "-c", script], stop_timeout_s=1), tmp_path, values, "")
    with pytest.raises(UserError, match="exited with code 4 before it was ready"):
        await process.start(tmp_path)
    child = int((tmp_path / "child").read_text())
    assert not _alive(child)  # the process group was stopped, not only the bot


async def test_secrets_made_up_for_a_started_bot_are_visible_to_start_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("WHATSAPP_APP_SECRET", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_VERIFY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    start = BotStart(
        command=["{python}", "-m", "mybot"],
        env={
            "MY_SECRET": "${WHATSAPP_APP_SECRET}",
            "MY_TOKEN": "Bearer ${WHATSAPP_ACCESS_TOKEN}",
            "MY_NUMBER": "${WHATSAPP_PHONE_NUMBER_ID}",
            "MY_API": "{api_url}/v26.0",
        },
    )
    factory = WhatsAppBotFactory(
        WhatsAppBotConfig(webhook_url="http://127.0.0.1:{port}/webhook", start=start), tmp_path
    )
    try:
        assert factory.process is not None
        env = factory.process.env
        assert env["MY_SECRET"] == factory.app_secret and len(factory.app_secret) == 32
        assert env["MY_TOKEN"] == f"Bearer {factory.access_token}"
        assert env["MY_NUMBER"] == factory.config.phone_number_id
        assert env["MY_API"] == f"{factory.graph.url}/v26.0"
    finally:
        await factory.aclose()  # never started: its Graph API socket closed, no HTTP session made yet
        forget_secrets()
    with pytest.raises(UserError, match=r"bot.start.env.X uses \$\{NOT_SET_ANYWHERE\}"):
        WhatsAppBotFactory(
            WhatsAppBotConfig(
                webhook_url="http://127.0.0.1:{port}/webhook",
                start=BotStart(command=["x"], env={"X": "${NOT_SET_ANYWHERE}"}),
            ),
            tmp_path,
        )
    forget_secrets()
