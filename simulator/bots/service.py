"""A service bot the suite starts for the run (`bot.start`): launch, wait until ready, stop cleanly.

A team's bot is a web service (an `http` or `whatsapp` bot). With `bot.start` the engine runs it for the
run, so `simulator run` is one command and CI needs no second terminal: the command is started before the
first conversation, in its own process group, with its output in the run folder's `bot.log`; the engine waits
until it answers (an HTTP URL, or a TCP port); at the end, however the run ends, its group gets SIGTERM, then
SIGKILL after `stop_timeout_s`. If the engine dies without stopping it (kill -9), a watchdog (watchdog.py)
stops the group. A command that cannot start, exits, or never gets ready is one UserError naming the command
and the tail of its log, and leaves nothing running.

Placeholders: `{port}` is a free loopback port chosen when the run starts (a resumed run gets a new one),
`{python}` this interpreter; an adapter may add its own (whatsapp: `{api_url}`). They are filled in the
bot's URLs, the command, its env and the readiness check.
"""

from __future__ import annotations

__all__ = [
    "BotProcess",
    "StartOnce",
    "death_of",
    "fill",
    "free_port",
    "placeholder_values",
    "while_alive",
]

import asyncio
import contextlib
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

import httpx

from simulator.bots.watchdog import MARK_VARIABLE, WATCHDOG, marked_pids
from simulator.config.bots import BotStart
from simulator.errors import Problem, UserError
from simulator.eventloop import within
from simulator.record.redact import LogRedactor, redact
from simulator.tls import shared_ssl_context

if TYPE_CHECKING:
    from simulator.config.suite import Suite

PLACEHOLDER_NAMES = ("port", "python", "api_url")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDER_NAMES) + r")\}")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
LOG_NAME = "bot.log"
_TAIL_LINES = 15
_COPY_GRACE_S = 2.0
# A call fails the moment the bot's socket closes, a little before its exit is reaped: this long, at most, is
# waited for the exit (and the last of its output) before the failure is said.
DEATH_GRACE_S = 0.5
T = TypeVar("T")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", "::"}


def free_port() -> int:
    """A loopback TCP port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def placeholder_values(started: bool) -> dict[str, str]:
    """The values of `{python}` and, for a bot the engine starts (only then is the port the engine's to
    choose), `{port}`, for one run."""
    values = {"python": sys.executable}
    if started:
        values["port"] = str(free_port())
    return values


def fill(text: str, values: dict[str, str], where: str) -> str:
    """`text` with its placeholders filled; a placeholder with no value is a UserError naming `where`."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise UserError(
                f"{where} uses {{{name}}}, which has no value here: {{port}} needs bot.start (the engine "
                "picks the port for the bot it starts), {api_url} a whatsapp bot"
            )
        return values[name]

    return _PLACEHOLDER.sub(value, text)


def _expand_env(value: str, key: str, known: dict[str, str]) -> str:
    """`${VAR}` in a `bot.start.env` value, from the environment or what the adapter passes the bot (whatsapp:
    the secrets it made up for the run), so `APP_SECRET: ${WHATSAPP_APP_SECRET}` works either way."""

    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in known:
            raise UserError(f"bot.start.env.{key} uses ${{{name}}}; set the {name} environment variable")
        return known[name]

    return _VAR.sub(variable, value)


def _exit_words(code: int) -> str:
    """How a process ended, from its return code (negative: the signal that killed it)."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"was killed by {name} (exit code {code})"


async def death_of(process: BotProcess | None, grace_s: float = DEATH_GRACE_S) -> str | None:
    """Why a call to a bot the suite started failed, when the reason is that its process died (with its
    exit and the end of its log); None for a bot the suite did not start, or one that still runs. `grace_s`
    0: only an exit already known (a turn that ended as usual, checked at no cost)."""
    return None if process is None else await process.death(grace_s)


async def while_alive(process: BotProcess | None, awaitable: Awaitable[T], seconds: float) -> T:
    """`awaitable` within `seconds`, else TimeoutError; for a bot the suite started, the TimeoutError comes
    as soon as its process exits (the caller asks `death_of` why), so a dead bot is not waited for."""
    running = None if process is None else process._process
    if running is None or running.returncode is not None:
        return await within(awaitable, seconds)
    task = asyncio.ensure_future(awaitable)
    exited = asyncio.ensure_future(running.wait())
    try:
        await asyncio.wait({task, exited}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        exited.cancel()
        if not task.done():
            task.cancel()  # a queue's get() cancelled leaves its item in the queue
    if task.done():
        return task.result()
    raise TimeoutError


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-_TAIL_LINES:]) or "(the log is empty)"


class BotProcess:
    """One started bot: its command (placeholders filled), environment, readiness check and log."""

    def __init__(
        self,
        start: BotStart,
        base_dir: Path,
        values: dict[str, str],
        default_ready_url: str,
        extra_env: dict[str, str] | None = None,
        *,
        url_field: str = "bot.url",
        suite: Suite | None = None,
    ) -> None:
        self.config = start
        # Where the port the bot listens on was set, for the error when another program holds it first.
        self._suite = suite
        self._url_field = url_field
        self.command = [fill(part, values, "bot.start.command") for part in start.command]
        self.extra_env = dict(extra_env or {})
        known = {**os.environ, **self.extra_env}
        self.env = {
            key: fill(_expand_env(value, key, known), values, f"bot.start.env.{key}")
            for key, value in start.env.items()
        }
        self.cwd = base_dir / start.cwd if start.cwd else base_dir
        ready = start.ready
        self.ready_url = fill(ready.url, values, "bot.start.ready.url") if ready and ready.url else None
        port = fill(str(ready.port), values, "bot.start.ready.port") if ready and ready.port else None
        if self.ready_url is None and port is None:
            port = str(urlsplit(default_ready_url).port or 80)
        self.ready_port = int(port) if port is not None else None
        self.timeout_s = ready.timeout_s if ready else 30.0
        self.log_path: Path | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._copier: asyncio.Task[None] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        # In the bot's environment, inherited by every process it starts, even one that leaves its group
        # (watchdog.py): what the stop and the watchdog look for.
        self.mark = secrets.token_hex(12)
        self._lifeline: int | None = None  # the write end of the watchdog's pipe: only this process holds it

    def describe(self) -> str:
        return shlex.join(self.command)

    def exit_code(self) -> int | None:
        """The exit code once the process has ended, else None."""
        return None if self._process is None else self._process.returncode

    def death_note(self) -> str | None:
        """A sentence for a failed call when the process has exited: its code, what that means for the
        conversation, and the tail of its log."""
        code = self.exit_code()
        if code is None or self.log_path is None:
            return None
        return (
            f"the bot process ({self.describe()}) {_exit_words(code)} during the run: the bot crashed, so "
            "this conversation is a bot error, neither judged nor counted. Fix the crash (the end of "
            f"{self.log_path} says why), then re-run the errored conversations (`simulator run --resume "
            "RUN --retry-errors`):\n" + _tail(self.log_path)
        )

    async def death(self, grace_s: float = DEATH_GRACE_S) -> str | None:
        """`death_note` once the exit is known: a failed call waits up to `grace_s` for the process to be
        reaped; once it has exited, the rest of its output (a traceback) is waited for, up to DEATH_GRACE_S,
        so the note's log tail is whole; None if it still runs."""
        process = self._process
        if process is None:
            return None
        if process.returncode is None and grace_s > 0:
            with contextlib.suppress(TimeoutError):
                await within(process.wait(), grace_s)
        if process.returncode is not None and self._copier is not None:
            with contextlib.suppress(TimeoutError):
                await within(asyncio.shield(self._copier), DEATH_GRACE_S)
        return self.death_note()

    def recent_log(self, lines: int = 8) -> str | None:
        """The last lines of the running bot's log, for an error that may be explained there."""
        if self.log_path is None or not self.log_path.exists():
            return None
        tail = "\n".join(_tail(self.log_path).splitlines()[-lines:])
        return f"The end of the bot's log ({self.log_path}):\n{tail}"

    async def start(self, log_dir: Path | None) -> None:
        """Start the command and wait until it is ready; a UserError (with the log's tail) if it is not."""
        await self._refuse_a_taken_port()
        folder = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="simulator-bot-"))
        self.log_path = folder / LOG_NAME
        self._log(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting: {self.describe()}")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.command,
                cwd=self.cwd,
                env={**os.environ, **self.extra_env, **self.env, MARK_VARIABLE: self.mark},
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,  # its own process group: the stop reaches its children
            )
        except OSError as exc:
            raise UserError(
                f"bot.start: could not start {self.describe()} (in {self.cwd}): {exc}; fix bot.start.command"
            ) from exc
        self._start_watchdog(self._process.pid)
        self._copier = asyncio.create_task(self._copy_output())
        try:
            await self._wait_ready()
        except UserError:
            await self.stop()  # its children too: nothing of a failed start is left running
            raise

    def _readiness(self) -> tuple[str, str, int]:
        """The field that sets where the bot is checked for readiness, and that host and port."""
        if self.ready_url is not None:
            parts = urlsplit(self.ready_url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            return "bot.start.ready.url", parts.hostname or "127.0.0.1", port
        assert self.ready_port is not None
        ready = self.config.ready
        field = "bot.start.ready.port" if ready is not None and ready.port else self._url_field
        return field, "127.0.0.1", self.ready_port

    async def _refuse_a_taken_port(self) -> None:
        """Before the start: if the readiness check already answers on this machine, another program holds
        the bot's port. The bot would fail to listen there while the check passed, and the run would talk to
        that other program: a UserError naming the suite's field instead."""
        field, host, port = self._readiness()
        if host not in _LOCAL_HOSTS:
            return  # a check on another machine: whatever answers there is not on this one's ports
        try:
            _, writer = await within(asyncio.open_connection(host, port), 1.0)
        except (OSError, TimeoutError):
            return
        writer.close()
        suite = self._suite
        where = [part if not part.isdigit() else int(part) for part in field.split(".")]
        raise UserError(
            "bot.start: another program already listens on the bot's port",
            [
                Problem(
                    str(suite.file if suite is not None and suite.file is not None else "suite"),
                    f"{host}:{port} answers before the bot is started, so the bot cannot listen there and the "
                    "run would talk to that program; stop that program, or choose another port here and in "
                    "bot.start.command (`{port}` in both: a free port the engine picks)",
                    suite.line_of(*where) if suite is not None else None,
                    field,
                )
            ],
        )

    def _start_watchdog(self, pgid: int) -> None:
        """The watchdog (watchdog.py) that stops the bot's process group if this process dies unannounced."""
        assert self.log_path is not None
        read_end, self._lifeline = os.pipe()  # not inheritable: no other child holds the write end
        try:
            self._watchdog = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WATCHDOG,
                    str(pgid),
                    str(self.config.stop_timeout_s),
                    str(self.log_path),
                    self.mark,
                ],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(read_end)

    def _log(self, line: str) -> None:
        assert self.log_path is not None
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(redact(line) + "\n")

    async def _copy_output(self) -> None:
        """The bot's output, line by line, into bot.log with every secret redacted (a bot may print its
        token)."""
        assert self._process is not None and self._process.stdout is not None
        assert self.log_path is not None
        # Open for the copy's life (a bot that logs every request would otherwise cost an open per line);
        # appended and flushed line by line, so the log reads whole while the bot runs.
        redactor = LogRedactor()  # a private key printed over several lines is replaced whole
        with self.log_path.open("a", encoding="utf-8") as log:
            while line := await self._process.stdout.readline():
                log.write(redactor.line(line.decode("utf-8", errors="replace").rstrip("\n")) + "\n")
                log.flush()

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            code = self.exit_code()
            if code is not None:
                await self.stop()  # its children too (one may hold its output open); then the log is whole
                raise UserError(self._not_ready(f"{_exit_words(code)} before it was ready"))
            if await self._ready():
                return
            if time.monotonic() > deadline:
                what = self.ready_url or f"port {self.ready_port}"
                raise UserError(
                    self._not_ready(
                        f"was not ready within {self.timeout_s:g} s ({what} did not answer; "
                        "bot.start.ready.timeout_s)"
                    )
                )
            await asyncio.sleep(0.05)

    def _not_ready(self, what: str) -> str:
        tail = _tail(self.log_path) if self.log_path else "(no log)"
        return f"bot.start: {self.describe()} {what}. The end of its log ({self.log_path}):\n{tail}"

    async def _ready(self) -> bool:
        if self.ready_url is not None:
            try:
                async with httpx.AsyncClient(timeout=1.0, verify=shared_ssl_context()) as client:
                    response = await client.get(self.ready_url)
            except httpx.HTTPError:
                return False
            return response.status_code < 500
        try:
            _, writer = await within(asyncio.open_connection("127.0.0.1", self.ready_port), 1.0)
        except (OSError, TimeoutError):
            return False
        writer.close()
        return True

    async def stop(self) -> None:
        """SIGTERM to the process group (the bot and every child it made, even once the bot itself has
        exited), then SIGKILL after `stop_timeout_s`; the exit goes in the log. The watchdog goes first."""
        self._stop_watchdog()
        process = self._process
        if process is None:
            return
        if self._group_alive():
            self._signal(signal.SIGTERM)
            deadline = time.monotonic() + self.config.stop_timeout_s
            while self._group_alive() and time.monotonic() < deadline:
                if process.returncode is None:
                    with contextlib.suppress(TimeoutError):
                        await within(process.wait(), 0.05)
                else:
                    await asyncio.sleep(0.05)
            if self._group_alive():
                self._signal(signal.SIGKILL)
        await self._stop_marked()
        code = await process.wait()
        await self._finish_copy()
        self._log(f"--- the bot process {_exit_words(code)}")
        self._process = None

    async def _finish_copy(self) -> None:
        """The rest of the bot's output into the log; bounded, since a process that left the group (a
        daemon that made its own session) may hold the pipe open."""
        if self._copier is None:
            return
        try:
            await within(asyncio.shield(self._copier), _COPY_GRACE_S)
        except TimeoutError:
            self._copier.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._copier
        self._copier = None

    async def _stop_marked(self) -> None:
        """Every process that carries this bot's mark but left its group (a daemon in its own session):
        SIGTERM, then SIGKILL after stop_timeout_s (Linux; elsewhere there is no /proc to find them)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = marked_pids(self.mark)
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + self.config.stop_timeout_s
            while pids and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                pids = marked_pids(self.mark)
            if not pids:
                return

    def _stop_watchdog(self) -> None:
        if self._watchdog is not None:
            self._watchdog.kill()
            self._watchdog.wait()
            self._watchdog = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None

    def _group_alive(self) -> bool:
        """Whether any process of the bot's group is left (an exited bot not yet reaped counts)."""
        assert self._process is not None
        try:
            os.killpg(self._process.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _signal(self, sig: signal.Signals) -> None:
        assert self._process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, sig)


class StartOnce:
    """A factory's start-up (serve, start the bot, handshake), run once however many conversations open at
    the same time; a failure is remembered, so every later conversation gets the same clear error instead
    of talking to a bot that never started."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._done = False
        self._failure: UserError | None = None

    async def run(self, start: Callable[[], Awaitable[None]]) -> None:
        async with self._lock:
            if not self._done:
                self._done = True
                try:
                    await start()
                except UserError as exc:
                    self._failure = exc
            if self._failure is not None:
                raise self._failure
