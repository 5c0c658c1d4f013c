"""The request budget: never more than `rpm` requests in a minute, whatever the concurrency."""

from __future__ import annotations

import asyncio

import pytest

from simulator.config.providers import ProviderSettings
from simulator.providers.base import ModelRequest
from simulator.providers.hub import ModelHub
from simulator.providers.pacer import Pacer
from simulator.testing import FakeLLMServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("rpm", "calls"), [(60, 10), (600, 50), (6000, 300), (30, 4)])
def test_the_bucket_allows_a_burst_then_exactly_the_rate(rpm: float, calls: int) -> None:
    clock = FakeClock()
    pacer = Pacer(rpm, clock=clock)
    due = []
    for _ in range(calls):
        due.append(clock.now + pacer.delay())
    # Every request beyond the first second's burst is spaced by 60/rpm seconds.
    burst = int(pacer.capacity)
    assert due[:burst] == [0.0] * burst
    gaps = [b - a for a, b in zip(due[burst - 1 :], due[burst:], strict=False)]
    assert all(gap == pytest.approx(60 / rpm) for gap in gaps)
    # In any window of 60 s no more than rpm + burst requests start.
    for start in due:
        assert sum(1 for t in due if start <= t < start + 60) <= rpm + burst


def test_refills_while_idle_but_never_beyond_the_burst() -> None:
    clock = FakeClock()
    pacer = Pacer(120, clock=clock)  # 2 per second, burst 2
    assert [pacer.delay() for _ in range(2)] == [0.0, 0.0]
    assert pacer.delay() == pytest.approx(0.5)
    clock.now = 100.0  # a long pause refills only up to the burst
    assert [pacer.delay() for _ in range(2)] == [0.0, 0.0]
    assert pacer.delay() == pytest.approx(0.5)


async def test_a_client_with_a_budget_keeps_to_it_at_high_concurrency() -> None:
    async with FakeLLMServer() as server:
        settings = ProviderSettings(base_url=server.openai_base_url, rpm=1200, max_connections=64)
        hub = ModelHub({"openai": settings})
        client, model = hub.client("openai:fake")
        loop = asyncio.get_running_loop()
        started = loop.time()
        request = ModelRequest(model=model, messages=[{"role": "user", "content": "hi"}])
        await asyncio.gather(*(client.generate(request) for _ in range(60)))
        elapsed = loop.time() - started
        await hub.aclose()
    assert len(server.calls) == 60
    # 60 requests at 20 per second after a burst of 20: at least 2 seconds, whatever the concurrency.
    assert elapsed >= 1.9
    assert client.pacer is not None and client.pacer.waited_s > 0
