"""The environment server is listening before the first conversation opens: conversations that open while it
starts (concurrency > 1) wait for it, and none is given an empty `env_url` (issue 38, the start-up race)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from aiohttp import web

from simulator.bots.http_bot import HttpBotFactory
from simulator.config.bots import HttpBotConfig
from simulator.config.environment import EnvironmentSpec
from simulator.config.scenario import Scenario
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.record.parts import ToolCallPart
from simulator.users.offline import OfflineUser

SPEC = EnvironmentSpec.model_validate(
    {
        "state": {"booked": []},
        "tools": {"find_service": {"responses": [{"when": {}, "result": {"service": "A&E"}}]}},
    }
)


class _BookingBot(BaseHTTPRequestHandler):
    """An HTTP bot that calls the environment on every turn with the `env_url` it was given."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        url = body.get("env_url") or ""
        type(self).seen.append(url)
        try:
            answer = httpx.post(
                f"{url}/tools/find_service",
                json={"conversation_id": body["conversation_id"], "arguments": {}},
            ).json()
            text = f"Go to {answer['result']['service']}."
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            text = f"I could not reach my tools ({type(exc).__name__}: {url!r})"
        data = json.dumps({"messages": [text], "closed": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def bot_url() -> Any:
    _BookingBot.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BookingBot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/chat"
    server.shutdown()


@pytest.fixture
def slow_listen(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback server takes 0.3 s to start listening (a loaded machine): the window of the race."""
    original = web.TCPSite.start

    async def slow_start(self: web.TCPSite) -> None:
        await asyncio.sleep(0.3)
        await original(self)

    monkeypatch.setattr(web.TCPSite, "start", slow_start)


def test_conversations_opened_while_the_server_starts_all_get_its_url(
    bot_url: str, slow_listen: None
) -> None:
    """Four conversations open at once on a factory whose server is not yet listening (no `start` call,
    as a worker that opens first would): each waits for it and calls its tool."""
    scenario = Scenario.model_validate({"id": "s", "persona": "p", "goal": "g"})

    async def go() -> list[Any]:
        bots = HttpBotFactory(HttpBotConfig(url=bot_url))
        try:
            return await asyncio.gather(
                *(
                    run_conversation(
                        ConversationPlan(scenario, n),
                        lambda p, a: OfflineUser(scenario),
                        bots,
                        environment=SPEC,
                    )
                    for n in range(4)
                )
            )
        finally:
            await bots.aclose()

    records = asyncio.run(go())
    assert len(_BookingBot.seen) == 4 and all(url.startswith("http://127.0.0.1:") for url in _BookingBot.seen)
    for record in records:
        calls = [p for p in record.turns[1].parts if isinstance(p, ToolCallPart)]
        assert [(c.name, c.result) for c in calls] == [("find_service", {"service": "A&E"})], record.turns[1]


def test_a_run_starts_the_server_before_any_conversation(
    bot_url: str, slow_listen: None, tmp_path: Path
) -> None:
    """Through the engine, concurrency 4: the adapter's `start` (called before the first conversation)
    brings the server up, and every conversation's tool call is recorded."""
    from simulator.config.factors import suite_scenarios
    from simulator.config.suite import load_suite
    from simulator.engine.runner import RunOptions, run_suite
    from simulator.record.folder import RunFolder

    root = Path(__file__).resolve().parent.parent
    paths = sorted(str(p) for p in (root / "scenarios" / "triage").glob("*.yaml"))[:4]
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(
        f"""
name: race
concurrency: 4
scenarios: {{paths: {json.dumps(paths)}}}
bot: {{type: http, url: "{bot_url}"}}
user: {{model: offline, vocabulary: {root}/examples/triage_vocabulary.yaml}}
environment:
  state: {{booked: []}}
  tools:
    find_service:
      responses: [{{when: {{}}, result: {{service: A&E}}}}]
""",
        encoding="utf-8",
    )
    suite = load_suite(suite_file)
    result = asyncio.run(
        run_suite(suite, suite_scenarios(suite), RunOptions(out=tmp_path / "run", progress=False))
    )
    records = list(RunFolder.open(tmp_path / "run").conversations())
    assert result.errors == 0 and len(records) == 4 and len(_BookingBot.seen) == 4
    assert all(url.startswith("http://127.0.0.1:") for url in _BookingBot.seen)
    for record in records:
        calls = [p for t in record.turns for p in t.parts if isinstance(p, ToolCallPart)]
        assert [c.result for c in calls] == [{"service": "A&E"}], record.error
