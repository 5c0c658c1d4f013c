"""Small local HTTP servers for the tests that need a real socket: a model server speaking the chat
completions route (for the openai_endpoint bot kind), and any other one route (an http bot)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

from simulator.bots.openai_endpoint import OpenAIEndpointFactory
from simulator.config.bots.openai_endpoint import OpenAIEndpointBotConfig
from simulator.config.suite import OutcomeConfig

LEVELS = ["self_care", "gp", "urgent", "emergency"]


@asynccontextmanager
async def serving(route: str, handler: Any) -> AsyncIterator[str]:
    """A server on 127.0.0.1 (a free port) answering POSTs to `route` with `handler`; yields its URL."""
    app = web.Application()
    app.router.add_post(route, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}{route}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def model_server(handler: Any) -> AsyncIterator[str]:
    """A model server answering every chat request with `handler`; yields its /v1 base URL."""
    async with serving("/v1/chat/completions", handler) as url:
        yield url.removesuffix("/chat/completions")


def endpoint_factory(base_url: str, tmp_path: Path, **config: Any) -> OpenAIEndpointFactory:
    """The openai_endpoint bot of model `team-ft` at `base_url`, with the state tool `record_decision` held
    to the triage levels; `config` adds or replaces its fields (tools, tool_results, ...)."""
    settings: dict[str, Any] = {
        "tools": [{"name": "record_decision", "parameters": {"type": "object"}}],
        "state_tool": "record_decision",
        **config,
    }
    return OpenAIEndpointFactory(
        OpenAIEndpointBotConfig(base_url=base_url, model="team-ft", **settings),
        tmp_path,
        OutcomeConfig(key="triage_level", levels=LEVELS),
    )
