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

`AgentEndpoint` serves the same kind of agent as an OpenAI-compatible model, for the `openai_endpoint` adapter:
the caller's tools are the agent's external tools, whose calls the caller runs (the engine: on the world).
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
async def serve(bot: AgentBot | AgentEndpoint) -> AsyncIterator[str]:
    """The bot on 127.0.0.1 (a free port), in this event loop; yields its URL (the chat URL of an `AgentBot`,
    the `/v1` base URL of an `AgentEndpoint`)."""
    app = web.Application()
    path = "/chat" if isinstance(bot, AgentBot) else "/v1/chat/completions"
    app.router.add_post(path, bot.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}" + ("/chat" if isinstance(bot, AgentBot) else "/v1")
    finally:
        await runner.cleanup()


def as_history(messages: list[dict[str, Any]]) -> list[Any]:
    """OpenAI chat messages as pydantic-ai's message history (the API is stateless: the caller sends it all)."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    names: dict[str, str] = {}
    history: list[Any] = []
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "system":
            history.append(ModelRequest(parts=[SystemPromptPart(content=content)]))
        elif role == "user":
            history.append(ModelRequest(parts=[UserPromptPart(content=content)]))
        elif role == "assistant":
            parts: list[Any] = [TextPart(content=content)] if content else []
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(
                    ToolCallPart(
                        tool_name=call["function"]["name"],
                        args=call["function"]["arguments"],
                        tool_call_id=call["id"],
                    )
                )
            history.append(ModelResponse(parts=parts))
        elif role == "tool":
            call_id = message["tool_call_id"]
            part = ToolReturnPart(tool_name=names.get(call_id, ""), content=content, tool_call_id=call_id)
            history.append(ModelRequest(parts=[part]))
    return history


class AgentEndpoint:
    """The same agent served as an OpenAI-compatible model (`POST /v1/chat/completions`), as teams put an agent
    behind a gateway: the tools are the caller's (the request's `tools`), declared to pydantic-ai as an
    `ExternalToolset`, so the agent's run stops with `DeferredToolRequests` when its model calls one; those
    go back as the answer's `tool_calls`, and the caller's `tool` messages resume the run as
    `DeferredToolResults`. Behind the engine's `openai_endpoint` adapter, the caller runs them on the world."""

    def __init__(self, model_base_url: str, model: str) -> None:
        provider = OpenAIProvider(base_url=model_base_url, api_key="not-needed")
        self.model = OpenAIChatModel(model, provider=provider)
        self.name = model

    async def handle(self, request: web.Request) -> web.Response:
        from pydantic_ai import DeferredToolRequests, DeferredToolResults
        from pydantic_ai.tools import ToolDefinition
        from pydantic_ai.toolsets import ExternalToolset

        body = await request.json()
        messages: list[dict[str, Any]] = body["messages"]
        definitions = [
            ToolDefinition(
                name=t["function"]["name"],
                description=t["function"].get("description"),
                parameters_json_schema=t["function"].get("parameters") or {"type": "object"},
            )
            for t in body.get("tools") or []
        ]
        agent: Agent[None, str | DeferredToolRequests] = Agent(
            self.model, output_type=[str, DeferredToolRequests], toolsets=[ExternalToolset(definitions)]
        )
        if messages[-1]["role"] == "tool":  # the caller ran the tools: resume with their results
            answered = len(messages)
            while messages[answered - 1]["role"] == "tool":
                answered -= 1
            results = {m["tool_call_id"]: m.get("content") or "" for m in messages[answered:]}
            result = await agent.run(
                message_history=as_history(messages[:answered]),
                deferred_tool_results=DeferredToolResults(calls=results),
            )
        else:
            result = await agent.run(
                messages[-1]["content"], message_history=as_history(messages[:-1]) or None
            )
        output = result.output
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(output, DeferredToolRequests):
            message["tool_calls"] = [
                {
                    "id": call.tool_call_id,
                    "type": "function",
                    "function": {"name": call.tool_name, "arguments": call.args_as_json_str()},
                }
                for call in output.calls
            ]
        else:
            message["content"] = output
        usage = result.usage
        return web.json_response(
            {
                "id": "chatcmpl-agent",
                "object": "chat.completion",
                "created": 0,
                "model": self.name,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage.input_tokens,
                    "completion_tokens": usage.output_tokens,
                    "total_tokens": usage.input_tokens + usage.output_tokens,
                },
            }
        )
