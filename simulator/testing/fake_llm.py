"""A fake LLM HTTP server speaking the real Anthropic Messages and OpenAI Chat Completions wire formats.

Tests and benchmarks point the real `anthropic` / `openai` SDKs at it (base_url) instead of mocking them.
It adds seeded latency, token-rate pacing, injected faults and simulated prompt caching.
"""

from __future__ import annotations

__all__ = [
    "FakeCall",
    "FakeLLMServer",
    "FakeReply",
    "FaultConfig",
    "FaultKind",
    "LatencyModel",
    "Responder",
    "ServerBudget",
    "default_responder",
    "minimal_instance",
]

import asyncio
import inspect
import json
import logging
import math
import random
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import IO, Any

from aiohttp import web

from simulator.listening import listening_sockets
from simulator.testing.fake_llm_behaviour import (
    Api,
    FakeCall,
    FakeReply,
    FaultConfig,
    FaultKind,
    LatencyModel,
    PromptCache,
    Responder,
    default_responder,
    minimal_instance,
)
from simulator.testing.fake_llm_budget import ServerBudget
from simulator.testing.fake_llm_formats import (
    ParsedRequest,
    RequestError,
    TokenUsage,
    anthropic_error_body,
    anthropic_message,
    anthropic_sse,
    count_tokens,
    openai_completion,
    openai_error_body,
    openai_sse,
    parse_anthropic,
    parse_openai,
)

log = logging.getLogger(__name__)

_FAULT_MESSAGES = {
    500: "The fake LLM server injected an internal error.",
    429: "Rate limit reached (fake LLM server fault injection). Please retry after the indicated time.",
}
_REFUSAL = 'response_format type must be one of "text" or "json_object", but got: json_schema'


class FakeLLMServer:
    """The fake server: async (aiohttp) in the caller's loop, or in a background thread via `with`."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: LatencyModel | float = 0.0,
        tokens_per_second: float | None = None,
        faults: FaultConfig | None = None,
        refuse_json_schema: bool = False,
        seed: int = 0,
        request_log: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        budget: ServerBudget | None = None,
        compress: bool = False,
        address_fixes: tuple[str, str] = ("FakeLLMServer(port={0})", "FakeLLMServer(host='{0}')"),
    ) -> None:
        self.responder: Responder = responder or default_responder
        self.latency = latency if isinstance(latency, LatencyModel) else LatencyModel.fixed(latency)
        self.tokens_per_second = tokens_per_second
        self.faults = faults or FaultConfig()
        self.refuse_json_schema = refuse_json_schema
        self.request_log = request_log
        self.budget = budget  # a provider's rate limit: token buckets, rate-limit headers, 429s beyond them
        self.compress = compress  # gzip the JSON answers and errors, as the real APIs do when asked
        self.calls: list[FakeCall] = []
        self._host, self._port = host, port
        # How the user sets the port and the host, as the fix of an address it cannot have (listening.py):
        # Python's words here, the command line's (`--port {0}`) from fake_server.py.
        self._address_fixes = address_fixes
        self._fault_rng = random.Random(seed)
        self._latency_rng = random.Random(f"{seed}:latency")
        self._cache = PromptCache()
        self._runner: web.AppRunner | None = None
        self._log_file: IO[str] | None = None
        self._url: str | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`: the Anthropic SDK's base_url (OpenAI's is `openai_base_url`)."""
        if self._url is None:
            raise RuntimeError("the fake LLM server is not running; use `with` or `await server.start()`")
        return self._url

    @property
    def openai_base_url(self) -> str:
        """`base_url + "/v1"`, as the OpenAI SDK expects."""
        return self.base_url + "/v1"

    # ------------------------------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bind (port 0 picks a free port) and serve in the running event loop; an address it cannot have
        (a port taken, a host not this machine's) is a UserError naming it and the fix."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        port_fix, host_fix = self._address_fixes
        sockets = listening_sockets(self._host, self._port, port_fix=port_fix, host_fix=host_fix)
        await self._runner.setup()
        for sock in sockets:
            await web.SockSite(self._runner, sock).start()
        host, port = self._runner.addresses[0][:2]
        self._url = f"http://{host}:{port}"
        if self.request_log is not None:
            self._log_file = self.request_log.open("a", encoding="utf-8")

    async def stop(self) -> None:
        """Stop serving; requests still held (timeout faults) are cancelled."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def __aenter__(self) -> FakeLLMServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __enter__(self) -> FakeLLMServer:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="fake-llm-server", daemon=True)
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=10)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout=10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()
            self._loop = self._thread = None

    # ------------------------------------------------------------------------------------------ handlers

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake-llm-server"}]
        return web.json_response({"object": "list", "data": data})

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "anthropic")

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, "openai")

    def _error(
        self, api: Api, status: int, message: str, error_type: str | None = None, **headers: str
    ) -> web.Response:
        body = (anthropic_error_body if api == "anthropic" else openai_error_body)(
            status, message, error_type
        )
        return self._maybe_compressed(web.json_response(body, status=status, headers=headers))

    def _maybe_compressed(self, response: web.Response) -> web.Response:
        if self.compress:
            response.enable_compression(web.ContentCoding.gzip)
        return response

    async def _handle(self, request: web.Request, api: Api) -> web.StreamResponse:
        entry: dict[str, Any] = {}
        if self._log_file is not None:  # what only the log reads is made only for it
            entry.update(time=datetime.now(UTC).isoformat(), api=api, path=request.path)
            entry["header_names"] = sorted({name.lower() for name in request.headers})
        try:
            response = await self._serve(request, api, entry)
            entry["status"] = response.status
            return response
        except asyncio.CancelledError:
            entry["outcome"] = "client_gone"
            raise
        finally:
            if self._log_file is not None:
                self._log_file.write(json.dumps(entry, default=str) + "\n")
                self._log_file.flush()

    async def _serve(self, request: web.Request, api: Api, entry: dict[str, Any]) -> web.StreamResponse:
        headers = {name.lower(): value for name, value in request.headers.items()}
        if "authorization" not in headers and (api == "openai" or "x-api-key" not in headers):
            entry["outcome"] = "no_api_key"
            return self._error(api, 401, "No API key provided (x-api-key or Authorization header).")
        try:
            body = json.loads(await request.read())
            if not isinstance(body, dict):
                raise RequestError("the request body must be a JSON object")
            entry["body"] = body
            parsed = parse_anthropic(body) if api == "anthropic" else parse_openai(body)
        except (
            ValueError,
            AttributeError,
            TypeError,
        ) as exc:  # JSONDecodeError and RequestError are ValueErrors
            entry["outcome"] = "bad_request"
            return self._error(api, 400, f"invalid request: {exc}")
        call = FakeCall(
            api, parsed.model, parsed.system, parsed.messages, parsed.tools, parsed.schema,
            parsed.temperature, parsed.stream, body, headers, parsed.tool_results,
        )  # fmt: skip
        index = len(self.calls)
        self.calls.append(call)
        entry.update(index=index, model=parsed.model, stream=parsed.stream)
        if api == "openai" and self.refuse_json_schema and parsed.schema_kind == "json_schema":
            entry["outcome"] = "refused_json_schema"
            return web.json_response(
                {"error": {"code": 500, "message": _REFUSAL, "type": "server_error"}}, status=500
            )
        budget_headers: dict[str, str] = {}
        if self.budget is not None:
            cost = sum(unit.tokens for unit in parsed.cache_units) + (parsed.max_tokens or 0)
            wait, budget_headers = self.budget.admit(api, cost, time.monotonic())
            if wait > 0:
                entry["outcome"] = "over_budget"
                message = self.budget.refusal_message()
                after = {"retry-after": self.budget.retry_after(wait)}
                return self._error(api, 429, message, None, **after, **budget_headers)
        fault = self.faults.pick(index, self._fault_rng)
        entry["outcome"] = fault or "ok"
        if fault == "timeout":
            await asyncio.sleep(self.faults.timeout_s)
        delay = self.latency.sample(self._latency_rng)
        if fault in ("error_500", "error_429"):
            status = 500 if fault == "error_500" else 429
            retry = self.faults.retry_after_s if status == 429 else None
            instant = status == 429 and self.faults.instant_429  # refused before any work, as gateways do
            return await self._fail(
                api, FakeReply(status=status, retry_after=retry), 0.0 if instant else delay
            )
        reply = FakeReply(malformed=True) if fault == "malformed" else await self._ask(call)
        if reply.status != 200:
            entry["outcome"] = f"reply_{reply.status}"
            return await self._fail(api, reply, delay)
        return await self._answer(request, api, parsed, reply, index, delay, budget_headers)

    async def _ask(self, call: FakeCall) -> FakeReply:
        try:
            result = self.responder(call)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # the test's responder is broken: say so in the response, not silently
            log.exception("fake LLM responder raised")
            return FakeReply(
                status=500, error_type=None, text=f"fake responder raised {type(exc).__name__}: {exc}"
            )
        return FakeReply(text=result) if isinstance(result, str) else result

    async def _fail(self, api: Api, reply: FakeReply, delay: float) -> web.Response:
        if delay > 0:
            await asyncio.sleep(delay)
        message = reply.text or _FAULT_MESSAGES.get(reply.status, f"Fake error {reply.status}.")
        headers: dict[str, str] = {}
        if reply.retry_after is not None:
            headers["retry-after"] = (
                format_datetime(
                    datetime.now(UTC) + timedelta(seconds=math.ceil(reply.retry_after) + 1), usegmt=True
                )
                if self.faults.retry_after_date
                else f"{reply.retry_after:g}"
            )
        return self._error(api, reply.status, message, reply.error_type, **headers)

    async def _answer(
        self,
        request: web.Request,
        api: Api,
        parsed: ParsedRequest,
        reply: FakeReply,
        index: int,
        delay: float,
        extra_headers: dict[str, str],
    ) -> web.StreamResponse:
        text, truncated = reply.text, False
        if parsed.max_tokens is not None and count_tokens(text) > parsed.max_tokens:
            text, truncated = " ".join(text.split()[: parsed.max_tokens]), True
        usage = TokenUsage(input_tokens=sum(unit.tokens for unit in parsed.cache_units))
        usage.output_tokens = count_tokens(text)
        tool_calls = reply.all_tool_calls()
        for _, arguments in tool_calls:
            usage.output_tokens += count_tokens(json.dumps(arguments))
        if api == "anthropic":
            usage.cache_read, usage.cache_creation = self._cache.anthropic(parsed)
            usage.input_tokens -= usage.cache_read + usage.cache_creation  # Anthropic counts them apart
            stop = "tool_use" if tool_calls else "max_tokens" if truncated else "end_turn"
            body = anthropic_message(
                message_id=f"msg_fake{index:08d}", model=parsed.model, text=text,
                tool_calls=tool_calls, usage=usage, stop_reason=stop,
            )  # fmt: skip
            events = anthropic_sse(body, malformed=reply.malformed)
            id_header = {"request-id": f"req_fake{index:08d}"}
        else:
            usage.cache_read = self._cache.openai(parsed)
            finish = "tool_calls" if tool_calls else "length" if truncated else "stop"
            body = openai_completion(
                completion_id=f"chatcmpl-fake{index:08d}", model=parsed.model, text=text,
                tool_calls=tool_calls, usage=usage, finish_reason=finish,
            )  # fmt: skip
            events = openai_sse(body, include_usage=parsed.include_usage_in_stream, malformed=reply.malformed)
            id_header = {"x-request-id": f"req_fake{index:08d}"}
        id_header.update(extra_headers)
        tps = self.tokens_per_second
        if not parsed.stream:
            total = delay + (usage.output_tokens / tps if tps else 0.0)
            if total > 0:
                await asyncio.sleep(total)
            if reply.malformed:
                return web.Response(body=b'{"id": "broken", "content": [', content_type="application/json")
            return self._maybe_compressed(web.json_response(body, headers=id_header))
        if delay > 0:
            await asyncio.sleep(delay)
        stream = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        stream.headers.update(id_header)
        await stream.prepare(request)
        if not tps:  # nothing to pace: every event in one write, with the stream's end (one send)
            await stream.write_eof(b"".join(chunk for chunk, _ in events))
            return stream
        for chunk, tokens in events:
            if tokens:
                await asyncio.sleep(tokens / tps)
            await stream.write(chunk)
        await stream.write_eof()
        return stream
