"""Round four's runtime battery: what a hostile bot or tool does *while the run runs*, on every channel.

Each input is played as a real conversation (the engine's loop, the offline user, the real adapter: a python
bot in this process, an http bot on loopback, a WhatsApp bot behind signed webhooks and the local Graph API,
environment tools) and must end as a recorded error of the right kind (or, for text UTF-8 cannot hold, a
repaired message), never a traceback, a hang or the run's end; the record must be writable as a run-record
line. The classes are closed by mechanism (bots/turn_limits.py, bots/user_threads.py, the adapters' bounded
reads and the redaction's search through encodings); each class is tried with several inputs.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web

from simulator.bots.base import Reply
from simulator.bots.http_bot import HttpBotFactory
from simulator.bots.python_bot import PythonBotFactory
from simulator.bots.turn_limits import TurnLimits
from simulator.config.bots import HttpBotConfig
from simulator.config.environment import EnvironmentSpec
from simulator.config.scenario import Scenario
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.record.folder import dump_line
from simulator.record.models import ConversationRecord
from simulator.record.parts import ToolCallPart
from simulator.record.redact import forget_secrets, register_secrets
from simulator.users.offline import OfflineUser
from tests._whatsapp_bots import RawCall, channel_for, text

SCENARIO = Scenario(
    id="hostile-1",
    persona="A careful adult.",
    goal="Find out whether to see a doctor about a cough.",
    facts=["The cough started a week ago."],
    max_turns=2,
)
# What may fail a hostile conversation's bot turn: never an engine error, never a pass.
BOT_KINDS = {
    "invalid_reply",
    "over_limit",
    "timeout",
    "bot_exception",
    "http_status",
    "connection",
    "cloud_api_rule",
    "auth",
}
# The most any one conversation of this battery may take before the test calls it a hang.
HANG_S = 60


def _user(plan: ConversationPlan, attempt: int) -> OfflineUser:
    return OfflineUser(plan.scenario, seed=0, repeat=plan.repeat, volunteer_share=0.0)


async def _play(
    bots: Any, limits: TurnLimits | None = None, hang_s: float = HANG_S, **options: Any
) -> ConversationRecord:
    """One real conversation with `bots`; a hang is a failure, and the record must be writable."""
    plan = ConversationPlan(SCENARIO, 0)
    record = await asyncio.wait_for(run_conversation(plan, _user, bots, limits=limits, **options), hang_s)
    assert dump_line(record).endswith("\n")  # what the run writes: never a record its readers refuse
    return record


def _failed(record: ConversationRecord, kind: str, *phrases: str) -> str:
    """The record ends in the bot's error `kind`, saying `phrases`, with no traceback or exception text."""
    error = record.error
    assert error is not None and record.stop_reason == "error", record.stop_reason
    assert error.source == "bot" and error.kind == kind, (error.kind, error.message)
    assert error.kind in BOT_KINDS
    for phrase in phrases:
        assert phrase in error.message, error.message
    assert "Traceback" not in error.message and 'File "' not in error.message
    return error.message


def _python_bot(reply: Callable[..., Any], limits: TurnLimits) -> PythonBotFactory:
    class Bot:
        def send(self, text: str) -> Any:
            return reply()

    return PythonBotFactory("hostile:bot", Bot, limits)


# ------------------------------------------------------------------------------------- python bots' replies


def _endless() -> Iterator[str]:
    while True:
        yield "again"


async def _endless_async() -> AsyncIterator[str]:
    while True:
        yield "again"


class _Unshowable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    __repr__ = __str__


class _RaisingMessages:
    @property
    def messages(self) -> list[str]:
        raise SystemExit(3)


class _LoudError(Exception):
    def __str__(self) -> str:
        raise ValueError("cannot say")


def _raise(exc: BaseException) -> Callable[[], Any]:
    def reply() -> Any:
        raise exc

    return reply


# (what send() returns or does, the error kind, a phrase the error holds)
PYTHON_REPLIES: dict[str, tuple[Callable[[], Any], str, str]] = {
    "a generator that never ends": (_endless, "invalid_reply", "returned generator"),
    "an async generator that never ends": (_endless_async, "invalid_reply", "returned async_generator"),
    "a Reply of 10^6 parts": (lambda: Reply(parts=["a"] * 1_000_000), "over_limit", "max_messages_per_turn"),
    "10^6 messages": (lambda: ["a"] * 1_000_000, "over_limit", "max_messages_per_turn"),
    "a Reply of 10^6 messages": (lambda: Reply(["a"] * 1_000_000), "over_limit", "max_messages_per_turn"),
    "201 messages": (lambda: ["a"] * 201, "over_limit", "bot.max_messages_per_turn"),
    "an object whose __str__ raises": (_Unshowable, "invalid_reply", "returned _Unshowable"),
    "a list holding an object whose __str__ raises": (lambda: [_Unshowable()], "invalid_reply", "part 1"),
    "a reply whose messages property calls sys.exit": (_RaisingMessages, "invalid_reply", "sys.exit(3)"),
    "an exception whose __str__ raises": (_raise(_LoudError()), "bot_exception", "cannot be shown"),
    "sys.exit with a code whose repr raises": (
        _raise(SystemExit(_Unshowable())),
        "bot_exception",
        "sys.exit(",
    ),
    "KeyboardInterrupt": (_raise(KeyboardInterrupt()), "bot_exception", "KeyboardInterrupt"),
    "GeneratorExit": (_raise(GeneratorExit()), "bot_exception", "GeneratorExit"),
    "a state with a non-text key": (
        lambda: Reply(["hi"], state={_Unshowable(): 1}),
        "invalid_reply",
        "raised",
    ),
    "9 MB in one message": (lambda: "x" * 9_000_000, "invalid_reply", "bot.max_reply_bytes"),
}


@pytest.mark.parametrize("case", sorted(PYTHON_REPLIES))
async def test_a_python_bots_hostile_reply_is_a_recorded_error(case: str) -> None:
    reply, kind, phrase = PYTHON_REPLIES[case]
    _failed(await _play(_python_bot(reply, TurnLimits()), TurnLimits()), kind, phrase)


@pytest.mark.parametrize(
    "text", ["\ud800", "a\udfffb", "\udc80" * 50, "ok \ud83d"], ids=["high", "low", "many", "half-emoji"]
)
async def test_a_lone_surrogate_from_a_python_bot_is_recorded_repaired(text: str) -> None:
    record = await _play(_python_bot(lambda: [text, "second"], TurnLimits()))
    assert record.error is None
    line = json.loads(dump_line(record))
    said = [part["text"] for turn in line["turns"] if turn["role"] == "bot" for part in turn["parts"]]
    assert "\ufffd" in said[0] and said[1] == "second"


# ------------------------------------------------------------------------------- python bots that never end

BLOCKING_BOTS = {
    "writes to stdout forever": "import sys\nwhile True:\n    sys.stdout.write('x' * 80 + '\\n')",
    "sleeps forever": "import time\ntime.sleep(10**6)",
    "spins forever": "while True:\n    pass",
    "waits on a lock it holds": "import threading\nlock = threading.Lock()\nlock.acquire()\nlock.acquire()",
}

BLOCKING_MODULE = """
class Bot:
    def send(self, text):
{body}
        return "never"
"""


@pytest.mark.parametrize("case", sorted(BLOCKING_BOTS))
def test_a_python_bot_that_never_returns_ends_its_turn_and_lets_the_run_exit(
    tmp_path: Path, case: str
) -> None:
    """The turn's deadline ends the conversation; the thread left running cannot keep `simulator run` from
    exiting (it used to: Python joins its pools' threads at exit, so the run never ended)."""
    (tmp_path / "blocking_bot.py").write_text(
        BLOCKING_MODULE.format(body=textwrap.indent(BLOCKING_BOTS[case], " " * 8))
    )
    (tmp_path / "s.yaml").write_text("id: s1\npersona: p\ngoal: ask for help\nmax_turns: 2\n")
    (tmp_path / "suite.yaml").write_text(
        "scenarios: {paths: [s.yaml]}\nbot: {type: python, factory: 'blocking_bot:Bot', timeout_s: 1}\n"
        "user: {model: offline}\nruns: 2\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "simulator", "run", "suite.yaml", "--out", "run", "--no-progress"],
        capture_output=True,
        timeout=HANG_S,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 3, done.stderr.decode()[-2000:]  # every conversation an error: nothing judged
    said = done.stdout + done.stderr
    assert b"Traceback" not in said and b"run complete: 2 conversations (error=2)" in said
    for line in (tmp_path / "run" / "conversations.jsonl").read_text().splitlines():
        error = json.loads(line)["error"]
        assert error["kind"] == "timeout" and "bot.timeout_s" in error["message"]


# ------------------------------------------------------------------------------------- environment tools

TOOLS = """
def huge(state):
    return list(range(10**7))

def cycle(state):
    state["me"] = state
    return "done"

class Unshowable:
    def __repr__(self):
        raise RuntimeError("no repr")
    __str__ = __repr__

def unshowable(state):
    return {"value": Unshowable()}

def unshowable_key(state):
    return {Unshowable(): 1}

class Loud(Exception):
    def __str__(self):
        raise ValueError("cannot say")

def loud(state):
    raise Loud()

def exits(state):
    raise SystemExit(Unshowable())

def object_in_state(state):
    state["thing"] = Unshowable()
    return "done"

def ok(state, **given):
    return "fine"
"""


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EnvironmentSpec:
    (tmp_path / "hostile_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("hostile_tools", None)
    names = ["huge", "cycle", "unshowable", "unshowable_key", "loud", "exits", "object_in_state", "ok"]
    return EnvironmentSpec.model_validate(
        {
            "state": {"kept": True},
            "tool_timeout_s": 5,
            "tools": {name: {"function": f"hostile_tools:{name}"} for name in names},
        }
    )


TOOL_ERRORS = {
    "huge": "huge's result is larger than",
    "cycle": "the state after cycle is nested more than",
    "unshowable": "not JSON data",
    "unshowable_key": "not JSON data",
    "loud": "cannot be shown",
    "exits": "sys.exit(",
    "object_in_state": None,  # kept as text (the state's record is JSON-safe), never a traceback
}


@pytest.mark.parametrize("tool", sorted(TOOL_ERRORS))
async def test_a_hostile_tool_is_that_calls_recorded_error_and_the_conversation_goes_on(
    tools: EnvironmentSpec, tool: str
) -> None:
    class Bot:
        def __init__(self, env: Any) -> None:
            self.env = env

        def send(self, text: str) -> str:
            part = self.env.call(tool, {})
            after = self.env.call("ok", {})
            return f"{part.error is not None} {after.result}"

    record = await _play(PythonBotFactory("hostile:tools", Bot), environment=tools)
    assert record.error is None and record.stop_reason != "error", record.error
    calls = [p for turn in record.turns for p in turn.parts if isinstance(p, ToolCallPart)]
    first = calls[0]
    expected = TOOL_ERRORS[tool]
    if expected is None:
        assert record.environment_state is not None and "thing" in record.environment_state
    else:
        assert first.error is not None and expected in first.error, first.error
    assert calls[1].result == "fine"


@pytest.mark.parametrize("calls", [101, 1_000, 1_000_000])
async def test_a_bot_calling_a_tool_in_a_loop_is_stopped_at_the_turns_limit(
    tools: EnvironmentSpec, calls: int
) -> None:
    class Bot:
        def __init__(self, env: Any) -> None:
            self.env = env

        def send(self, text: str) -> str:
            for _ in range(calls):
                self.env.call("ok", {})
            return "done"

    # No turn deadline: a million refused calls take about 25 s of CPU, which a busy machine stretches
    # past any deadline; what is tested is the count, so only a hang (10 minutes) fails it.
    unbounded = TurnLimits(timeout_s=None)
    record = await _play(PythonBotFactory("hostile:loop", Bot), unbounded, 600, environment=tools)
    _failed(record, "over_limit", f"({calls:,})", "bot.max_tool_calls_per_turn")
    kept = [p for turn in record.turns for p in turn.parts if isinstance(p, ToolCallPart)]
    assert len(kept) == 101  # the allowed calls and the first refused one, as data; no more kept
    assert kept[-1].error is not None and "max_tool_calls_per_turn" in kept[-1].error


# ---------------------------------------------------------------------------------------------- http bots


async def _raw_server(handler: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> tuple[Any, str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            await handler(writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/chat"


async def _chunked_forever(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    while True:
        writer.write(b"4000\r\n" + b" " * 0x4000 + b"\r\n")
        await writer.drain()


async def _slow_chunks(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    while True:
        writer.write(b"1\r\n \r\n")
        await writer.drain()
        await asyncio.sleep(0.2)


async def _infinite_header(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
    while True:
        writer.write(b"a" * 4096)
        await writer.drain()


async def _many_headers(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\n")
    number = 0
    while True:
        number += 1
        writer.write(b"X-H%d: v\r\n" % number)
        await writer.drain()


async def _redirect_to_itself(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 302 Found\r\nLocation: /chat\r\nContent-Length: 0\r\n\r\n")
    await writer.drain()


def _json_answer(value: Any) -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    body = json.dumps(value).encode()

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        writer.write(body)
        await writer.drain()

    return answer


# (the server's behaviour, the error kind, a phrase)
HTTP_BOTS: dict[str, tuple[Callable[[asyncio.StreamWriter], Awaitable[None]], str, str]] = {
    "a chunked body that never ends": (_chunked_forever, "invalid_reply", "bot.max_reply_bytes"),
    "a chunk every 0.2 s forever": (_slow_chunks, "timeout", "bot.timeout_s"),
    "an endless header": (_infinite_header, "connection", ""),
    "endless headers": (_many_headers, "connection", ""),
    "a redirect to itself": (_redirect_to_itself, "http_status", "redirect"),
    "10^6 parts": (_json_answer({"parts": ["a"] * 1_000_000}), "over_limit", "max_messages_per_turn"),
    "1,000 messages": (_json_answer({"messages": ["a"] * 1_000}), "over_limit", "max_messages_per_turn"),
    "a part 64 levels deep": (
        _json_answer({"parts": [{"type": "event", "name": "e", "data": json.loads("[" * 70 + "]" * 70)}]}),
        "invalid_reply",
        "nested",
    ),
}


@pytest.mark.parametrize("case", sorted(HTTP_BOTS))
async def test_a_hostile_http_bot_is_a_recorded_error(case: str) -> None:
    behaviour, kind, phrase = HTTP_BOTS[case]
    server, url = await _raw_server(behaviour)
    # A deadline only where the deadline is what is tested: elsewhere the limit under test must fire first,
    # and a loaded machine must not let a 2 s deadline race it (endless headers take ~1,600 writes to fill h11's cap).
    config = HttpBotConfig(url=url, timeout_s=2 if kind == "timeout" else 15)
    factory = HttpBotFactory(config)
    try:
        record = await _play(factory, TurnLimits.of(config))
    finally:
        await factory.aclose()
        server.close()
    _failed(record, kind, phrase)


@pytest.mark.parametrize("escape", ["\\ud800", "a\\udfffb", "\\udc80\\udc80"])
async def test_a_lone_surrogate_from_an_http_bot_is_recorded_repaired(escape: str) -> None:
    body = ('{"messages": ["' + escape + '", "second"]}').encode()

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    server, url = await _raw_server(answer)
    factory = HttpBotFactory(HttpBotConfig(url=url, timeout_s=2))
    try:
        record = await _play(factory)
    finally:
        await factory.aclose()
        server.close()
    assert record.error is None
    assert "\ufffd" in json.loads(dump_line(record))["turns"][1]["parts"][0]["text"]


# ------------------------------------------------------------------------------------------ whatsapp bots


@pytest.fixture
def whatsapp_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("WHATSAPP_APP_SECRET", "app-secret-123")
    monkeypatch.setenv("WHATSAPP_ACCESS_TOKEN", "access-token-456")
    monkeypatch.setenv("WHATSAPP_VERIFY_TOKEN", "verify-token-789")
    yield
    forget_secrets()


# (the bot's script: (delay_s, message) pairs per incoming message, the config, the error kind, phrases)
WHATSAPP_BOTS: dict[str, tuple[Any, dict[str, Any], str, tuple[str, ...]]] = {
    "1,000 messages at once": (
        lambda m, b: [(0.0, text(f"m{i}")) for i in range(1_000)],
        {"max_messages_per_turn": 20},
        "over_limit",
        ("bot.max_messages_per_turn",),
    ),
    "a message every 50 ms forever": (
        lambda m, b: [(0.05, text("again")) for _ in range(100_000)],
        # 4 s: a bot process slowed by a loaded machine must have begun sending before the turn ends
        {"max_messages_per_turn": 10_000, "timeout_s": 4},
        "timeout",
        ("still sending", "bot.timeout_s"),
    ),
    "a body that is not JSON": (
        lambda m, b: [(0.0, RawCall(content=b"to=447700900123&text=hi"))],
        {"timeout_s": 5},
        "cloud_api_rule",
        ("the request body is not JSON",),
    ),
    "a path the Graph API does not serve": (
        lambda m, b: [(0.0, RawCall(path="/{version}/{number}/mesages", json={"to": "1"}))],
        {"timeout_s": 5},
        "cloud_api_rule",
        ("which the local Graph API does not serve",),
    ),
    "the wrong bearer token": (
        lambda m, b: [(0.0, RawCall(json={"to": "1", "type": "text"}, token="not-the-token"))],
        {"timeout_s": 5},
        "auth",
        ("without the right bearer token",),
    ),
    "answers the webhook but never posts": (
        lambda m, b: [],
        {"timeout_s": 0.5},
        "timeout",
        ("sent no message within 0.5 s", "no call for this conversation reached"),
    ),
}


@pytest.mark.parametrize("case", sorted(WHATSAPP_BOTS))
async def test_a_hostile_whatsapp_bot_is_a_recorded_error_with_the_right_hint(
    tmp_path: Path, whatsapp_secrets: None, case: str
) -> None:
    script, config, kind, phrases = WHATSAPP_BOTS[case]
    async for channel in channel_for(script, tmp_path, verify=False, **config):
        record = await _play(channel.factory, TurnLimits.of(channel.factory.config))
        _failed(record, kind, *phrases)


async def _sleeping_webhook(request: web.Request) -> web.Response:
    await asyncio.sleep(3600)
    return web.Response(text="late")


async def _trickling_webhook(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    while True:
        await response.write(b" ")
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("handler", [_sleeping_webhook, _trickling_webhook], ids=["sleeps", "trickles"])
async def test_a_whatsapp_webhook_that_never_answers_meets_the_turns_deadline(
    tmp_path: Path, whatsapp_secrets: None, handler: Any
) -> None:
    from simulator.bots.whatsapp import WhatsAppBotFactory
    from simulator.config.bots.whatsapp import WhatsAppBotConfig

    app = web.Application()
    app.router.add_post("/webhook", handler)
    # The sleeping handler never returns: the runner's cleanup would wait its default 60 s for it.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    config = WhatsAppBotConfig(webhook_url=f"http://127.0.0.1:{port}/webhook", verify=False, timeout_s=1)
    factory = WhatsAppBotFactory(config, tmp_path)
    try:
        record = await _play(factory, TurnLimits.of(config))
    finally:
        await factory.aclose()
        await runner.cleanup()
    _failed(record, "timeout", "bot.timeout_s")
    assert "sent no message" not in record.error.message  # type: ignore[union-attr]


# -------------------------------------------------------------------------- secrets in combined encodings

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


ENCODED: dict[str, Callable[[bytes], str]] = {
    "base64 of gzip of hex": lambda raw: _b64(gzip.compress(raw.hex().encode())),
    "url-encoded base32": lambda raw: quote(base64.b32encode(raw).decode(), safe=""),
    "base64 of hex": lambda raw: _b64(raw.hex().encode()),
    "hex of base64": lambda raw: _b64(raw).encode().hex(),
    "base64 of base64": lambda raw: _b64(_b64(raw).encode()),
    "base32 of base64": lambda raw: base64.b32encode(_b64(raw).encode()).decode(),
    "hex of gzip": lambda raw: gzip.compress(raw).hex(),
    "lowercase base32 of gzip": lambda raw: base64.b32encode(gzip.compress(raw)).decode().lower(),
    "base64url of hex": lambda raw: base64.urlsafe_b64encode(raw.hex().encode()).decode(),
    "hex of hex": lambda raw: raw.hex().encode().hex(),
    "base64 of JSON holding it": lambda raw: _b64(json.dumps({"key": raw.decode()}).encode()),
    "url-encoded base64 inside text": lambda raw: quote(_b64(b"user:" + raw), safe=""),
}


@pytest.mark.parametrize("case", sorted(ENCODED))
async def test_a_secret_in_combined_encodings_is_redacted_from_replies_and_tool_arguments(
    tools: EnvironmentSpec, case: str
) -> None:
    encoded = ENCODED[case](SECRET.encode())
    register_secrets([SECRET])

    class Bot:
        def __init__(self, env: Any) -> None:
            self.env = env

        def send(self, text: str) -> Any:
            assert self.env.call("ok", {"token": encoded}).error is None
            return Reply([f"here it is: {encoded}."], state={"echo": encoded})

    try:
        record = await _play(PythonBotFactory("hostile:secret", Bot), environment=tools)
        line = dump_line(record)
    finally:
        forget_secrets()
    assert encoded not in line and SECRET not in line
    assert line.count("[redacted]") >= 3  # the reply, the tool call's arguments, the state


# ------------------------------------------------------------------------- the same tools, through MCP


async def test_hostile_tools_called_through_mcp_are_errors_and_the_server_goes_on(
    tools: EnvironmentSpec,
) -> None:
    """An http bot's agent calling the environment over MCP (bots/env_mcp.py, the `mcp` SDK's own client):
    a tool raising BaseException, SystemExit with an unshowable code, an exception whose __str__ raises, a
    result that is not JSON or too large, a cycle in the state: each is an `isError` result, and the next
    call on the same server works."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from simulator.bots.env_mcp import EnvironmentMCPServer
    from simulator.bots.environment import make_environment

    environment = make_environment(tools, {}, "run/mcp#0/1")
    assert environment is not None
    server = EnvironmentMCPServer()
    await server.start()
    url = server.register("run/mcp#0/1", environment)
    names = sorted(name for name, error in TOOL_ERRORS.items() if error is not None)
    try:
        async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            results = [await session.call_tool(name, {}) for name in names]
            after = await session.call_tool("ok", {})
    finally:
        await server.aclose()
    for name, result in zip(names, results, strict=True):
        assert result.is_error and TOOL_ERRORS[name] in result.content[0].text, (name, result.content)
    assert not after.is_error and after.content[0].text == "fine"
    assert environment.final_state() == {"kept": True}
