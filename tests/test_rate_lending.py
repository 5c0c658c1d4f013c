"""A conversation whose call waits out a 429's Retry-After lends its place in the run: whole runs through the
real openai SDK against the fake LLM server, which refuses chosen calls at once with `Retry-After`.

What is asserted is counted, never timed: how many conversations were open at once, that every one finished
without an error, and that isolated 429s cut neither the connection limit nor the rate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from simulator.config.loading import load_scenarios
from simulator.config.providers import ProviderSettings
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.providers.base import ChatMessage, ModelRequest
from simulator.providers.hub import ModelHub
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply, FaultConfig, LatencyModel
from tests._reliability_fixtures import triage_responder, write_suite

REQUEST = ModelRequest(model="fake", messages=[ChatMessage(role="user", content="hello")], max_tokens=50)


async def _run(suite_path: Path, out: Path) -> Any:
    suite = load_suite(suite_path)
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    return await run_suite(suite, scenarios, RunOptions(out=out, progress=False))


def _refusing(every: int, retry_after: float) -> Any:
    """The triage responder, but every `every`-th call is refused at once: 429 with a Retry-After."""
    seen = {"calls": 0}

    def respond(call: FakeCall) -> FakeReply | str:
        seen["calls"] += 1
        if every and seen["calls"] % every == 0:
            return FakeReply(status=429, text="Rate limit reached, try again later", retry_after=retry_after)
        return triage_responder(call)

    return respond


@pytest.mark.parametrize(("every", "concurrency"), [(9, 3), (13, 4), (7, 2)])
async def test_conversations_waiting_out_a_retry_lend_their_places(
    tmp_path: Path, every: int, concurrency: int
) -> None:
    # Isolated 429s (one call in `every`), each told to come back in 0.3 s: long beside a call to the
    # loopback server, so other conversations start while it waits.
    async with FakeLLMServer(_refusing(every, 0.3)) as server:
        suite = write_suite(
            tmp_path / "suite", server.openai_base_url, runs=4, concurrency=concurrency,
            user="openai:fake-user", provider={"max_connections": 8},
        )  # fmt: skip
        result = await _run(suite, tmp_path / "run")
    assert result.finished == 12 and result.errors == 0  # every conversation, none lost to the 429s
    calls, limits = result.calls["openai"], result.limits["openai"]
    assert calls["rate_limits"] >= 3 and calls["failed"] == 0
    # Places were lent while calls waited, never more than `concurrency` of them.
    assert concurrency < result.most_open <= 2 * concurrency
    # Isolated 429s: neither the connection limit nor a rate was cut.
    assert limits["cuts"] == 0 and limits["lowest"] == 8
    assert "rpm" not in limits


async def test_without_retries_no_place_is_lent(tmp_path: Path) -> None:
    async with FakeLLMServer(_refusing(0, 0.3)) as server:
        suite = write_suite(
            tmp_path / "suite", server.openai_base_url, runs=4, concurrency=3, user="openai:fake-user"
        )
        result = await _run(suite, tmp_path / "run")
    assert result.finished == 12 and result.calls["openai"]["rate_limits"] == 0
    assert result.most_open == 3


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_instant_429s_are_waited_out_counted_and_cut_nothing(
    api: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    # 5% refused at once with Retry-After 50 ms, through each real SDK: every retry's wait is counted
    # (what the run's pool lends places on), and isolated 429s change neither the limit nor the pace.
    faults = FaultConfig(error_429=0.05, retry_after_s=0.05, instant_429=True)
    async with FakeLLMServer(faults=faults, seed=seed, latency=LatencyModel.fixed(0.02)) as server:
        url = server.openai_base_url if api == "openai" else server.base_url
        hub = ModelHub({api: ProviderSettings.model_validate({"base_url": url, "max_connections": 50})})
        client = hub.client(f"{api}:fake")[0]
        await asyncio.gather(*(client.generate(REQUEST) for _ in range(300)))
        await hub.aclose()
    assert client.stats.rate_limits > 3 and client.stats.failed == 0
    assert hub.waits.total == client.stats.retries == client.stats.rate_limits and hub.waits.count == 0
    assert client.limiter.cuts == 0 and client.limiter.lowest == 50
    assert not client.pacer.active
