"""The environment over MCP, for `http` bots whose agent takes its tools from an MCP server.

With `bot.environment_mcp: true` in a suite with an environment, the engine serves each conversation's
environment tools as an MCP server (streamable HTTP, the official `mcp` SDK: `pip install 'simulator[mcp]'`)
on 127.0.0.1, and every request to the bot carries `env_mcp_url`, that conversation's own endpoint
(`http://127.0.0.1:PORT/mcp/c7`). An agent built on an MCP client connects to it unchanged: `tools/list`
gives the suite's tools with their JSON schemas, `tools/call` runs one against the conversation's state.
Every call is a `tool_call` part of the turn it was made in, checked like any other; a failed call is an
MCP tool result with `isError` (data, never a protocol error). An unknown endpoint is a 404.
"""

from __future__ import annotations

__all__ = ["EnvironmentMCPServer"]

import asyncio
import json
from typing import Any

from simulator.bots.environment import Environment
from simulator.errors import UserError
from simulator.record.redact import redact
from simulator.visible import server_log_config


def _imports() -> Any:
    try:
        import mcp_types
        import uvicorn
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    except ImportError as exc:
        raise UserError(
            f"bot.environment_mcp needs the MCP SDK ({exc.name} is missing): pip install 'simulator[mcp]'"
        ) from None
    return mcp_types, uvicorn, Server, StreamableHTTPSessionManager


class EnvironmentMCPServer:
    """One MCP endpoint per conversation in flight, on one loopback port (started once, before the run)."""

    def __init__(self) -> None:
        self._environments: dict[str, Environment] = {}
        self._keys: dict[str, str] = {}  # conversation id -> its endpoint's key (ids hold '/' and '#')
        self._count = 0
        self._starting = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._server: Any = None
        self.url = ""

    async def start(self) -> str:
        """Start listening (once; openers wait for it); the base URL the endpoints are under."""
        async with self._starting:
            if not self.url:
                self.url = await self._listen()
        return self.url

    def register(self, conversation_id: str, environment: Environment) -> str:
        """The conversation's own endpoint URL (the server must be started)."""
        self._count += 1
        key = f"c{self._count}"
        self._keys[conversation_id] = key
        self._environments[key] = environment
        return f"{self.url}/{key}"

    def forget(self, conversation_id: str) -> None:
        key = self._keys.pop(conversation_id, None)
        if key is not None:
            self._environments.pop(key, None)

    async def _listen(self) -> str:
        mcp_types, uvicorn, server_class, manager_class = _imports()

        def environment_of(context: Any) -> Environment:
            request = context.request
            key = str(request.scope["path"]).rstrip("/").rsplit("/", 1)[-1] if request is not None else ""
            environment = self._environments.get(key)
            if environment is None:
                raise ValueError("no conversation in flight has this endpoint")
            return environment

        async def list_tools(context: Any, params: Any) -> Any:
            tools = environment_of(context).tool_specs()
            return mcp_types.ListToolsResult(
                tools=[
                    mcp_types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                    for t in tools
                ]
            )

        async def call_tool(context: Any, params: Any) -> Any:
            part = await environment_of(context).acall(params.name, dict(params.arguments or {}))
            if part.error is not None:
                return mcp_types.CallToolResult(
                    content=[mcp_types.TextContent(text=part.error)], is_error=True
                )
            text = (
                part.result if isinstance(part.result, str) else json.dumps(part.result, ensure_ascii=False)
            )
            structured = part.result if isinstance(part.result, dict) else None
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(text=text)], structured_content=structured
            )

        server = server_class("simulator-environment", on_list_tools=list_tools, on_call_tool=call_tool)
        manager = manager_class(app=server, stateless=True, json_response=True)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            key = str(scope.get("path", "")).rstrip("/").rsplit("/", 1)[-1]
            if scope["type"] == "http" and key not in self._environments:
                body = b'{"error": "no conversation in flight has this MCP endpoint"}'
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": body})
                return
            await manager.handle_request(scope, receive, send)

        return await self._serve(uvicorn, app, manager)

    async def _serve(self, uvicorn: Any, app: Any, manager: Any) -> str:
        """Serve `app` on a free loopback port until aclose; its base URL once it listens."""
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=0,
            lifespan="off",
            log_level="warning",
            log_config=server_log_config(clean=redact),  # its lines through visible.py, secrets redacted
        )
        self._server = uvicorn.Server(config)
        ready = asyncio.get_running_loop().create_future()

        async def serve() -> None:
            async with manager.run():
                serving = asyncio.create_task(self._server.serve())
                while not self._server.started and not serving.done():
                    await asyncio.sleep(0.01)
                if not ready.done():
                    ready.set_result(None)
                await serving

        self._task = asyncio.create_task(serve())
        await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not self._server.started:
            raise UserError("the environment's MCP server did not start on 127.0.0.1")
        port = self._server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/mcp"

    async def aclose(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
            self._task = None
            self.url = ""
