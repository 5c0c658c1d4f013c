"""The environment over HTTP, for `http` bots: a loopback endpoint the engine serves for the run.

Each request to an http bot in a suite with an environment carries `env_url`. The bot calls a tool with
`POST {env_url}/tools/{name}` and the body `{"conversation_id": "<the id it was given>", "arguments":
{...}}`; the answer is `{"id": ..., "result": ...}` or `{"id": ..., "error": "..."}` (HTTP 200 either way:
a failed tool is data). `GET {env_url}/tools?conversation_id=...` lists the tools with their parameters.
An unknown conversation is a 404, a body that is not JSON a 400. Every call is recorded as a `tool_call`
part of the turn it was made in (docs/environment.md).
"""

from __future__ import annotations

__all__ = ["EnvironmentServer"]

import asyncio
from typing import Any

from aiohttp import web

from simulator.bots.environment import Environment


class EnvironmentServer:
    """Serves the environments of the conversations in flight, on 127.0.0.1 (a free port)."""

    def __init__(self) -> None:
        self._environments: dict[str, Environment] = {}
        self._runner: web.AppRunner | None = None
        self._starting = asyncio.Lock()
        self.url = ""

    async def start(self) -> str:
        """Start listening (once); the base URL bots are given as `env_url`. Conversations that open while
        it starts wait for it: none is given an empty URL (the adapter also starts it before the run)."""
        async with self._starting:
            if not self.url:
                self.url = await self._listen()
        return self.url

    async def _listen(self) -> str:
        app = web.Application()
        app.router.add_post("/env/tools/{name}", self._call)
        app.router.add_get("/env/tools", self._list)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = getattr(site, "_server", None)
        port = server.sockets[0].getsockname()[1] if server is not None and server.sockets else 0
        return f"http://127.0.0.1:{port}/env"

    def register(self, conversation_id: str, environment: Environment) -> None:
        self._environments[conversation_id] = environment

    def forget(self, conversation_id: str) -> None:
        self._environments.pop(conversation_id, None)

    def _environment(self, conversation_id: Any) -> Environment:
        environment = self._environments.get(str(conversation_id))
        if environment is None:
            raise web.HTTPNotFound(
                text='{"error": "no conversation in flight has this conversation_id"}',
                content_type="application/json",
            )
        return environment

    async def _call(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": "the body must be JSON"}, status=400)
        if not isinstance(body, dict) or not isinstance(body.get("arguments", {}), dict):
            return web.json_response(
                {"error": 'send {"conversation_id": ..., "arguments": {...}}'}, status=400
            )
        environment = self._environment(body.get("conversation_id"))
        part = await environment.acall(request.match_info["name"], body.get("arguments") or {})
        answer: dict[str, Any] = {"id": part.id}
        answer.update({"error": part.error} if part.error is not None else {"result": part.result})
        return web.json_response(answer)

    async def _list(self, request: web.Request) -> web.Response:
        environment = self._environment(request.query.get("conversation_id"))
        return web.json_response({"tools": [t.model_dump() for t in environment.tool_specs()]})

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self.url = ""
