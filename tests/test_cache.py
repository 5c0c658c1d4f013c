"""The response cache: keyed by everything that changes the output plus the repeat, opt-in per role,
counted in the run record, stored as JSON in SQLite."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from simulator.cli import main as cli_main
from simulator.config.loading import load_scenarios
from simulator.config.suite import ProviderSettings, load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.providers.base import ChatMessage, ModelRequest, ToolSpec
from simulator.providers.cache import CACHE_KEY_VERSION, ResponseCache, cache_key
from simulator.providers.hub import ModelHub, call_scope
from simulator.record.folder import VERDICTS, RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer
from tests._reliability_fixtures import outcome, triage_responder, write_suite

ROOT = Path(__file__).resolve().parent.parent
REQUEST = ModelRequest(
    model="fake", system="judge", messages=[ChatMessage(role="user", content="transcript")], temperature=0.0
)


async def test_same_request_and_repeat_hits_a_different_repeat_or_temperature_misses(tmp_path: Path) -> None:
    async with FakeLLMServer() as server:
        cache = ResponseCache(tmp_path / "cache.sqlite")
        settings = ProviderSettings(base_url=server.openai_base_url)
        hub = ModelHub({"openai": settings}, cache=cache, cache_roles=frozenset({"judge"}))
        judge = hub.for_role("judge").client("openai:fake")[0]
        first = await judge.generate(REQUEST, repeat=0)
        again = await judge.generate(REQUEST.model_copy(), repeat=0)
        assert len(server.calls) == 1
        assert (first.cached, again.cached, again.text) == (False, True, first.text)
        await judge.generate(REQUEST, repeat=1)
        await judge.generate(REQUEST.model_copy(update={"temperature": 0.7}), repeat=0)
        assert len(server.calls) == 3
        with call_scope(repeat=1) as scope:  # the repeat may come from the runner's scope instead
            assert (await judge.generate(REQUEST)).cached
        assert scope.cache_hits == {"judge": 1}
        user = hub.for_role("user").client("openai:fake")[0]  # the cache is not enabled for users
        await user.generate(REQUEST, repeat=0)
        assert len(server.calls) == 4
        assert judge.stats.cache_hits == {"judge": 2} and judge.stats.cache_misses == {"judge": 3}
        await hub.aclose()


def test_the_key_holds_everything_that_changes_the_output_and_nothing_else() -> None:
    base = cache_key("openai", "http://a/v1", REQUEST, 0)
    assert base.startswith(f"v{CACHE_KEY_VERSION}:sha256:")
    tool = ToolSpec(name="t", description="d", parameters={"type": "object"})
    changed = [
        cache_key("anthropic", "http://a/v1", REQUEST, 0),
        cache_key("openai", "http://b/v1", REQUEST, 0),
        cache_key("openai", "http://a/v1", REQUEST, 1),
        cache_key("openai", "http://a/v1", REQUEST, 0, attempt=1),
        *(
            cache_key("openai", "http://a/v1", REQUEST.model_copy(update=change), 0)
            for change in (
                {"model": "other"},
                {"system": "other"},
                {"messages": [ChatMessage(role="user", content="other")]},
                {"temperature": None},
                {"max_tokens": 10},
                {"output_schema": {"type": "object"}},
                {"schema_name": "verdict"},
                {"tools": [tool]},
            )
        ),
    ]
    assert len(set(changed)) == len(changed) and base not in changed
    # A provider-side caching hint changes nothing the model says.
    hint = REQUEST.model_copy(update={"cacheable_prefix_messages": 1})
    assert cache_key("openai", "http://a/v1", hint, 0) == base


def test_the_key_is_the_same_in_another_process() -> None:
    code = (
        "from simulator.providers.cache import cache_key\n"
        "from simulator.providers.base import ChatMessage, ModelRequest\n"
        "r = ModelRequest(model='fake', system='judge', temperature=0.0,\n"
        "                 messages=[ChatMessage(role='user', content='transcript')])\n"
        "print(cache_key('openai', 'http://a/v1', r, 3))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == cache_key("openai", "http://a/v1", REQUEST, 3)


async def _run(suite_path: Path, out: Path) -> Any:
    suite = load_suite(suite_path)
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    return await run_suite(suite, scenarios, RunOptions(out=out, progress=False))


async def test_a_second_run_from_the_cache_costs_nothing_and_counts_its_hits(tmp_path: Path) -> None:
    cache = {"path": "cache.sqlite", "roles": ["user", "bot", "judge"]}
    async with FakeLLMServer(triage_responder) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, user="openai:fake-user", cache=cache)
        await _run(suite, tmp_path / "first")
        calls = len(server.calls)
        second = await _run(suite, tmp_path / "second")
        assert len(server.calls) == calls  # nothing sent again
    first_run, second_run = RunFolder(tmp_path / "first"), RunFolder(tmp_path / "second")
    assert outcome(second_run.conversations(), second_run.verdicts()) == outcome(
        first_run.conversations(), first_run.verdicts()
    )
    assert all(not r.cache_hits for r in first_run.conversations())
    per_record = [r.cache_hits for r in second_run.conversations()]
    assert all(hits["user"] >= 2 and hits["bot"] >= 2 for hits in per_record)
    total = sum(h["user"] + h["bot"] for h in per_record)
    assert total == calls
    assert second_run.read_manifest().cache_hits() == {
        "user": sum(h["user"] for h in per_record),
        "bot": sum(h["bot"] for h in per_record),
    }
    assert second.calls["openai"]["attempts"] == 0
    database = (tmp_path / "suite" / "cache.sqlite").read_bytes()
    assert database.startswith(b"SQLite format 3\x00")  # SQLite with JSON rows, never pickle
    with sqlite3.connect(tmp_path / "suite" / "cache.sqlite") as db:
        rows = db.execute("SELECT role, response FROM responses").fetchall()
    assert len(rows) == calls and {role for role, _ in rows} == {"user", "bot"}
    assert all("text" in json.loads(response) for _, response in rows)


async def test_the_cache_is_opt_in_per_role(tmp_path: Path) -> None:
    async with FakeLLMServer(triage_responder) as server:
        suite = write_suite(
            tmp_path / "suite", server.openai_base_url, user="openai:fake-user", cache={"roles": ["bot"]}
        )
        await _run(suite, tmp_path / "first")
        user_calls = sum(1 for call in server.calls if not call.tools)
        before = len(server.calls)
        await _run(suite, tmp_path / "second")
        again = server.calls[before:]
    assert len(again) == user_calls and not any(call.tools for call in again)  # users asked, bot cached


class _BreaksOnce:
    """The simulated user steps out of character on its very first call, then plays along."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, call: FakeCall) -> str:
        if call.tools:
            return triage_responder(call)  # type: ignore[return-value]
        self.calls += 1
        if self.calls == 1:
            return "As an AI language model I cannot pretend to be ill."
        return triage_responder(call)  # type: ignore[return-value]


async def test_a_replay_after_a_character_break_is_a_new_sample_not_a_cache_hit(tmp_path: Path) -> None:
    scenarios = """
    - id: chest
      persona: A man with chest pain.
      goal: Find out what to do.
      expected: {triage_level: gp}
      max_turns: 6
    """
    async with FakeLLMServer(_BreaksOnce()) as server:
        suite = write_suite(
            tmp_path / "suite",
            server.openai_base_url,
            runs=1,
            user="openai:fake-user",
            cache={"roles": ["user", "bot"]},
            scenarios=scenarios,
        )
        await _run(suite, tmp_path / "first")
        calls = len(server.calls)
        await _run(suite, tmp_path / "second")
        assert len(server.calls) == calls
    for run in ("first", "second"):
        (record,) = RunFolder(tmp_path / run).conversations()
        assert record.stop_reason == "bot_closed" and len(record.character_breaks) == 1


async def test_rejudging_a_run_from_the_cache_costs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    async with FakeLLMServer(triage_responder) as server:
        suite = write_suite(
            tmp_path / "suite", server.openai_base_url, cache={"roles": ["judge"]}, criteria=2
        )
        await _run(suite, out)
        judge_calls = sum(1 for call in server.calls if call.schema is not None)
        assert judge_calls == 6 * 2  # 3 scenarios x 2 repeats, 2 criteria each
        first = sorted((v.conversation_id, v.criterion_id, v.result) for v in RunFolder(out).verdicts())
        (out / VERDICTS).unlink()
        before = len(server.calls)
        assert await asyncio.to_thread(cli_main, ["judge", str(out)]) == 0
        assert len(server.calls) == before  # every judgement came from the cache, repeat by repeat
    again = sorted((v.conversation_id, v.criterion_id, v.result) for v in RunFolder(out).verdicts())
    assert again == first  # the simulated user's fidelity verdicts too, from its stored provenance
    assert len([v for v in again if not v[1].startswith("fidelity.")]) == 6 * 3  # outcome + two criteria
