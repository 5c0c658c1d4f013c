"""The `http` adapter: POST {conversation_id, turn, message}; the bot answers {messages | message, ...}."""

from __future__ import annotations

__all__ = ["HttpBotFactory", "http_bot_factory"]

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from simulator.bots.base import BotError, BotReply, parts_from_json
from simulator.bots.bounded_read import read_bounded
from simulator.bots.environment import Environment
from simulator.bots.reply_check import MAX_REPLY_BYTES, checked_flags
from simulator.bots.service import BotProcess, StartOnce, death_of, fill, placeholder_values
from simulator.bots.turn_limits import over_limit
from simulator.config.bot_identity import UNANSWERED
from simulator.config.bots import HttpBotConfig
from simulator.config.secrets import redact_url
from simulator.config.wire import header_problem
from simulator.errors import UserError
from simulator.jsonbounds import JSONRefused, loads_bounded
from simulator.providers._http import connection_refused
from simulator.record.parts import MediaPart, Part, PickPart, TextPart
from simulator.record.redact import redact
from simulator.tls import shared_ssl_context

if TYPE_CHECKING:
    from simulator.config.suite import Suite
    from simulator.providers.hub import ModelHub

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_headers(headers: dict[str, str]) -> dict[str, str]:
    """Expand ${VAR} from the environment at run time; the expanded values are never recorded."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise UserError(f"the bot's headers use ${{{name}}}; set the {name} environment variable")
        return os.environ[name]

    expanded = {key: _VAR.sub(value, template) for key, template in headers.items()}
    for key, text in expanded.items():
        why = header_problem(key, text)  # the rule `validate` checks the template by; never quotes the value
        if why is not None:
            raise UserError(f"bot.headers (after expanding ${{VAR}}): {why}, or the variable it names")
    return expanded


class HttpSession:
    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        conversation_id: str,
        timeout_s: float | None = None,
        max_bytes: int = MAX_REPLY_BYTES,
        env_url: str | None = None,
        on_close: Any = None,
        env_mcp_url: str | None = None,
        max_messages: int = 200,
    ) -> None:
        self._client = client
        self._max_messages = max_messages  # bot.max_messages_per_turn: counted before any part is read
        self._env_url = env_url
        self._env_mcp_url = env_mcp_url
        self._on_close = on_close
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._url = url
        self._conversation_id = conversation_id
        self._state: dict[str, Any] | None = None
        self.process: BotProcess | None = None  # the bot the suite started, if it did

    takes_parts = True  # a turn with more than its text (a burst, a photo, a voice note) is sent as `parts`

    async def send(
        self, text: str, turn: int, *, pick: PickPart | None = None, parts: list[Part] | None = None
    ) -> BotReply:
        body: dict[str, Any] = {"conversation_id": self._conversation_id, "turn": turn, "message": text}
        if pick is not None:
            body["pick"] = {"id": pick.id, "title": pick.title}
        texts = [p for p in parts or [] if isinstance(p, TextPart)]
        if parts and (len(texts) > 1 or any(isinstance(p, MediaPart) for p in parts)):
            body["parts"] = [p.model_dump(mode="json", exclude_none=True) for p in parts]
        if self._env_url is not None:
            body["env_url"] = self._env_url  # POST {env_url}/tools/{name} (bots/env_server.py)
        if self._env_mcp_url is not None:
            body["env_mcp_url"] = self._env_mcp_url  # this conversation's MCP endpoint (bots/env_mcp.py)
        start = time.perf_counter()
        status, content = await self._post(body)
        latency = time.perf_counter() - start
        shown = redact(content[:400].decode("utf-8", "replace"))
        if status >= 400:
            raise BotError("http_status", f"the bot answered HTTP {status}: {shown[:200]}")
        if 300 <= status < 400:  # not followed: a POST redirected could lose its body, or leave the host
            raise BotError(
                "http_status",
                f"the bot answered HTTP {status}, a redirect, which is not followed; set bot.url to the address "
                "it redirects to",
            )
        try:
            data = loads_bounded(content, "the bot's answer")
        except JSONRefused as exc:
            raise BotError("invalid_reply", f"{exc}: {shown[:200]!r}") from exc
        if not isinstance(data, dict):
            raise BotError("invalid_reply", "the bot's answer must be a JSON object")
        for many in (data.get("parts"), data.get("messages")):
            if isinstance(many, list) and len(many) > self._max_messages:
                raise over_limit(
                    "sent more messages in one turn", len(many), "max_messages_per_turn", self._max_messages
                )
        parts = parts_from_json(data["parts"], "the bot's 'parts'") if "parts" in data else None
        messages = _said(data.get("messages"), data.get("message"))
        if parts is not None and messages is None:
            messages = [part.text for part in parts if isinstance(part, TextPart)]
        if not isinstance(messages, list) or not all(isinstance(m, str) for m in messages):
            raise BotError(
                "invalid_reply", "the bot's answer needs 'messages' (list of strings), 'message' or 'parts'"
            )
        handed_over, closed, state = checked_flags(
            data.get("handed_over"), data.get("closed"), data.get("state")
        )
        if state is not None:
            self._state = state
        return BotReply(
            messages=messages,
            handed_over=handed_over,
            closed=closed,
            state=state,
            latency_s=latency,
            raw={"request": body, "response": data},
            parts=parts,
        )

    async def _post(self, body: dict[str, Any]) -> tuple[int, bytes]:
        """POST one turn and read the answer within the turn's total deadline (`bot.timeout_s`, for the
        whole answer, not per read: a bot that trickles a byte at a time is cut) and the byte cap (counted
        after decompression: an endless stream or a gzip bomb is cut at the cap): bots/bounded_read.py."""
        try:
            return await read_bounded(
                self._client,
                "POST",
                self._url,
                timeout_s=self._timeout_s,
                max_bytes=self._max_bytes,
                who="the bot",
                json=body,
            )
        except httpx.HTTPError as exc:
            raise await self._failure(exc) from exc

    async def final_state(self) -> dict[str, Any] | None:
        return self._state

    async def _failure(self, exc: httpx.HTTPError) -> BotError:
        """A failed call, said as it is: the started bot died (its exit and log, once reaped), refused
        (nothing listens), timed out (after how long), dropped the connection, or other."""
        note = await death_of(self.process)
        if note:
            return BotError("connection", note)
        if connection_refused(exc):
            return BotError("connection", f"connection refused by {self._url}: is the bot running there?")
        if isinstance(exc, httpx.TimeoutException):
            limit = f"{self._timeout_s:g} s" if self._timeout_s is not None else "its timeout"
            return BotError(
                "timeout", f"the bot did not answer within {limit} (bot.timeout_s; {type(exc).__name__})"
            )
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return BotError(
                "connection",
                f"the bot at {self._url} closed or reset the connection without answering the turn: its "
                "server crashed or restarted while handling the request (its log says why); fix the bot "
                f"and run again ({type(exc).__name__}: {exc})",
            )
        return BotError(
            "connection",
            f"the request to the bot at {self._url} failed; check that it runs there and answers HTTP "
            f"({type(exc).__name__}: {exc})",
        )

    async def aclose(self) -> None:
        if self._on_close is not None:
            self._on_close(self._conversation_id)


class HttpBotFactory:
    """One shared HTTP client (connection pool) for every conversation with the bot; with `bot.start`, the
    bot process the suite starts for the run (bots/service.py)."""

    def __init__(
        self,
        config: HttpBotConfig,
        base_dir: Path | None = None,
        *,
        environment: bool = False,
        suite: Suite | None = None,
    ) -> None:
        self.config = config
        self._with_environment = environment  # the suite declares one: its server starts with the bot
        values = placeholder_values(config.start is not None)
        self._values = values  # the same {port} for the version URL
        self.url = fill(config.url, values, "bot.url")
        self.process = (
            BotProcess(config.start, base_dir or Path("."), values, self.url, suite=suite)
            if config.start is not None
            else None
        )
        self._once = StartOnce()
        self._client = httpx.AsyncClient(
            headers=expand_headers(config.headers),
            timeout=config.timeout_s,
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=100),
            verify=shared_ssl_context(),
        )
        self._env_server: Any = None  # an EnvironmentServer (bots/env_server.py), for suites with one
        self._mcp_server: Any = None  # an EnvironmentMCPServer (bots/env_mcp.py), with environment_mcp

    async def start(self, log_dir: Path | None = None) -> None:
        """Start the bot (bot.start) and wait until it is ready, once; in a suite with an environment, its
        loopback server too, so it listens before the first conversation opens."""
        if self._with_environment:
            await self._environment_server().start()
            if self.config.environment_mcp:
                await self._environment_mcp().start()
        process = self.process
        if process is not None:
            await self._once.run(lambda: process.start(log_dir))

    def _environment_mcp(self) -> Any:
        if self._mcp_server is None:
            from simulator.bots.env_mcp import EnvironmentMCPServer  # the mcp SDK, only when asked for

            self._mcp_server = EnvironmentMCPServer()
        return self._mcp_server

    def _environment_server(self) -> Any:
        if self._env_server is None:
            from simulator.bots.env_server import EnvironmentServer  # aiohttp's server, only when needed

            self._env_server = EnvironmentServer()
        return self._env_server

    async def identify(self) -> dict[str, str]:
        """What the bot answers at `bot.version_url` (JSON `version`, or the text), once it is ready; an
        unanswered request is said so, never a failed run."""
        if self.config.version_url is None:
            return {}
        url = fill(self.config.version_url, self._values, "bot.version_url")
        shown = redact_url(url)
        try:
            response = await self._client.get(expand_headers({"url": url})["url"])
        except httpx.HTTPError as exc:
            return {f"{shown} {UNANSWERED}": f"{type(exc).__name__}: {str(exc)[:200]}"}
        if response.status_code >= 400:  # said by its number: the server's reason phrase is never quoted
            return {f"{shown} {UNANSWERED}": f"it answered HTTP {response.status_code}"}
        try:
            data = response.json()
        except ValueError:
            data = None
        value = (
            str(data["version"]) if isinstance(data, dict) and "version" in data else response.text.strip()
        )
        return {f"answered by {shown}": value[:200]}

    async def open(self, conversation_id: str, environment: Environment | None = None) -> HttpSession:
        try:
            await self.start()
        except UserError as exc:
            raise BotError("start", str(exc)) from exc
        env_url, env_mcp_url, closers = None, None, []
        if environment is not None:
            server = self._environment_server()
            env_url = await server.start()  # already listening when the run started it; else waits for it
            server.register(conversation_id, environment)
            closers.append(server.forget)
            if self.config.environment_mcp:
                mcp = self._environment_mcp()
                try:
                    await mcp.start()
                except UserError as exc:
                    raise BotError("start", str(exc)) from exc
                env_mcp_url = mcp.register(conversation_id, environment)
                closers.append(mcp.forget)
        url = expand_headers({"url": self.url})["url"]  # a `${VAR}` token in the URL, never recorded
        session = HttpSession(
            self._client,
            url,
            conversation_id,
            self.config.timeout_s,
            self.config.max_reply_bytes,
            env_url=env_url,
            on_close=_all_of(closers),
            env_mcp_url=env_mcp_url,
            max_messages=self.config.max_messages_per_turn,
        )
        session.process = self.process
        return session

    async def aclose(self) -> None:
        if self.process is not None:
            await self.process.stop()
        await self._client.aclose()
        if self._env_server is not None:
            await self._env_server.aclose()
        if self._mcp_server is not None:
            await self._mcp_server.aclose()


def _all_of(closers: list[Any]) -> Any:
    """One close callback running each of the environment servers' `forget` (None when there are none)."""
    if not closers:
        return None

    def close(conversation_id: str) -> None:
        for forget in closers:
            forget(conversation_id)

    return close


def http_bot_factory(config: HttpBotConfig, suite: Suite, hub: ModelHub) -> HttpBotFactory:
    """The `http` kind's factory (config/bots/__init__.py registers it)."""
    return HttpBotFactory(config, suite.base_dir, environment=suite.environment is not None, suite=suite)


def _said(messages: Any, message: Any) -> list[str] | None:
    """What the bot said by `messages` (a list of strings) and `message` (a string); None when it gave
    neither. A field that is empty ([] or "") is a response model's default and gives way to the other (a
    FastAPI model with both fields answers `{"messages": [], "message": "Call 999 now"}`); two that both
    say something must say the same, else the reply is ambiguous: an `invalid_reply`, never one of them."""
    if messages is not None and not (
        isinstance(messages, list) and all(isinstance(m, str) for m in messages)
    ):
        raise BotError("invalid_reply", "the bot's 'messages' must be a list of strings")
    if message is not None and not isinstance(message, str):
        raise BotError("invalid_reply", f"the bot's 'message' must be a string, not {type(message).__name__}")
    if messages and message and messages != [message]:
        raise BotError(
            "invalid_reply",
            f"the bot's answer says one thing in 'messages' ({redact(repr(messages)[:120])}) and another in "
            f"'message' ({redact(repr(message)[:120])}); send one of them (or the same text in both)",
        )
    if message and not messages:
        return [message]
    if messages is None and message is None:
        return None
    return messages or []
