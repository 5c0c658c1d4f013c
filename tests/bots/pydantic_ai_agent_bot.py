"""A clinic front-desk agent built the way teams build them today: pydantic-ai (an `Agent` on an OpenAI-compatible
model), behind the engine's `http` adapter, taking its tools from the engine's simulated world.

It is a test fixture (tests/test_agent_frameworks.py). Its model is whatever OpenAI-compatible server
`model_base_url` names (the tests point it at the project's fake LLM server); its tools are not written here
but discovered per conversation, in one of two ways a real agent would:
- `http`: the engine's loopback tool endpoint (`env_url`: `GET /tools`, `POST /tools/{name}`), each tool
  wrapped with pydantic-ai's `Tool.from_schema`;
- `mcp`: the engine's per-conversation MCP server (`env_mcp_url`), through the official `mcp` SDK's client
  (streamable HTTP): `tools/list` then `tools/call`, again as pydantic-ai tools.
The conversation's history is pydantic-ai's own (`result.all_messages()`), kept per `conversation_id`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx
from aiohttp import web
from pydantic_ai import Agent, Tool
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

INSTRUCTIONS = "You are the clinic's front desk. Look the patient up before booking anything."
Call = Callable[[str, dict[str, Any]], Awaitable[str]]


@asynccontextmanager
async def http_tools(body: dict[str, Any]) -> AsyncIterator[tuple[list[dict[str, Any]], Call]]:
    """The tools and a caller from the engine's loopback endpoint (bots/env_server.py)."""
    url, conversation = body["env_url"], body["conversation_id"]
    async with httpx.AsyncClient(timeout=10) as client:
        listed = (await client.get(f"{url}/tools", params={"conversation_id": conversation})).json()

        async def call(name: str, arguments: dict[str, Any]) -> str:
            answer = (
                await client.post(
                    f"{url}/tools/{name}", json={"conversation_id": conversation, "arguments": arguments}
                )
            ).json()
            if "error" in answer:
                return f"ERROR: {answer['error']}"
            return json.dumps(answer["result"])

        yield listed["tools"], call


@asynccontextmanager
async def mcp_tools(body: dict[str, Any]) -> AsyncIterator[tuple[list[dict[str, Any]], Call]]:
    """The tools and a caller from the conversation's MCP endpoint, through the `mcp` SDK's own client."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(body["env_mcp_url"]) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tools = [
                {"name": t.name, "description": t.description or t.name, "parameters": t.input_schema}
                for t in listed.tools
            ]

            async def call(name: str, arguments: dict[str, Any]) -> str:
                result = await session.call_tool(name, arguments)
                text = "".join(getattr(block, "text", "") for block in result.content)
                return f"ERROR: {text}" if result.is_error else text

            yield tools, call


def as_tool(spec: dict[str, Any], call: Call) -> Tool[Any]:
    """One discovered tool as a pydantic-ai tool (its JSON schema as the world declares it)."""

    async def run(**arguments: Any) -> str:
        return await call(spec["name"], arguments)

    return Tool.from_schema(run, spec["name"], spec.get("description"), spec["parameters"])


class AgentBot:
    """The HTTP bot: one pydantic-ai agent run per turn, the history kept per conversation."""

    def __init__(self, model_base_url: str, model: str, tools_from: Literal["http", "mcp"]) -> None:
        provider = OpenAIProvider(base_url=model_base_url, api_key="not-needed")
        self.model = OpenAIChatModel(model, provider=provider)
        self.tools_from = tools_from
        self.histories: dict[str, list[Any]] = {}

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        source = http_tools if self.tools_from == "http" else mcp_tools
        async with source(body) as (specs, call):
            agent = Agent(self.model, instructions=INSTRUCTIONS, tools=[as_tool(s, call) for s in specs])
            history = self.histories.get(body["conversation_id"])
            result = await agent.run(body["message"], message_history=history)
        self.histories[body["conversation_id"]] = result.all_messages()
        return web.json_response({"messages": [result.output]})


@asynccontextmanager
async def serve(bot: AgentBot) -> AsyncIterator[str]:
    """The bot on 127.0.0.1 (a free port), in this event loop; yields its URL."""
    app = web.Application()
    app.router.add_post("/chat", bot.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/chat"
    finally:
        await runner.cleanup()
