"""Rate limits as budgets: the providers' rate-limit headers, the pacer following them, a fake provider
with a real token bucket, and an adaptive limit that random 429s do not collapse."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from simulator.config.providers import ProviderSettings
from simulator.providers.base import ModelRequest
from simulator.providers.hub import ModelHub
from simulator.providers.limiter import AdaptiveLimiter
from simulator.providers.pacer import Pacer
from simulator.providers.ratelimits import (
    Allowance,
    RateLimits,
    parse_duration_s,
    parse_reset_s,
    rate_limits_from_headers,
)
from simulator.testing import FakeLLMServer, FaultConfig, ServerBudget
from simulator.testing.fake_llm_budget import go_duration

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
REQUEST = ModelRequest(model="fake", messages=[{"role": "user", "content": "hi"}], max_tokens=20)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------------------------------ headers


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("0.5s", 0.5),
        ("12ms", 0.012),
        ("7", 7.0),
        ("2m", 120.0),
        ("250us", 0.00025),
    ],
)
def test_durations_in_openai_shapes(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "1x", "s1", "1s garbage", "2026-01-01T12:00:00Z"])
def test_what_is_not_a_duration_is_none(text: str) -> None:
    assert parse_duration_s(text) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2026-01-01T12:00:30Z", 30.0),
        ("2026-01-01T12:01:00+00:00", 60.0),
        ("2026-01-01T13:00:05+01:00", 5.0),
        ("2026-01-01T12:00:00.250Z", 0.25),
        ("2026-01-01T11:59:00Z", 0.0),  # already past: no wait, never negative
        ("6m0s", 360.0),
    ],
)
def test_resets_as_rfc3339_times_or_durations(text: str, seconds: float) -> None:
    assert parse_reset_s(text, NOW) == pytest.approx(seconds)


def test_openai_headers() -> None:
    headers = {
        "x-ratelimit-limit-requests": "5000",
        "x-ratelimit-remaining-requests": "4999",
        "x-ratelimit-reset-requests": "12ms",
        "x-ratelimit-limit-tokens": "160000",
        "x-ratelimit-remaining-tokens": "159976",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    limits = rate_limits_from_headers(headers, NOW)
    assert limits == RateLimits(
        requests=Allowance(remaining=4999, limit=5000, reset_s=0.012),
        tokens=Allowance(remaining=159976, limit=160000, reset_s=360.0),
    )


def test_anthropic_headers_take_the_tightest_token_budget() -> None:
    headers = {
        "anthropic-ratelimit-requests-limit": "1000",
        "anthropic-ratelimit-requests-remaining": "999",
        "anthropic-ratelimit-requests-reset": "2026-01-01T12:00:01Z",
        "anthropic-ratelimit-tokens-limit": "96000",
        "anthropic-ratelimit-tokens-remaining": "90000",
        "anthropic-ratelimit-tokens-reset": "2026-01-01T12:00:04Z",
        "anthropic-ratelimit-input-tokens-limit": "80000",
        "anthropic-ratelimit-input-tokens-remaining": "79000",
        "anthropic-ratelimit-input-tokens-reset": "2026-01-01T12:00:02Z",
        "anthropic-ratelimit-output-tokens-limit": "16000",
        "anthropic-ratelimit-output-tokens-remaining": "400",  # 2.5% left: the tightest
        "anthropic-ratelimit-output-tokens-reset": "2026-01-01T12:00:30Z",
    }
    limits = rate_limits_from_headers(headers, NOW)
    assert limits is not None
    assert limits.requests == Allowance(remaining=999, limit=1000, reset_s=1.0)
    assert limits.tokens == Allowance(remaining=400, limit=16000, reset_s=30.0)


def test_partial_odd_and_missing_headers() -> None:
    assert rate_limits_from_headers({"content-type": "application/json"}) is None
    only_requests = rate_limits_from_headers({"x-ratelimit-remaining-requests": "3"})
    assert only_requests == RateLimits(requests=Allowance(remaining=3), tokens=None)
    bad_reset = rate_limits_from_headers(
        {"anthropic-ratelimit-requests-remaining": "2", "anthropic-ratelimit-requests-reset": "whenever"}
    )
    assert bad_reset == RateLimits(requests=Allowance(remaining=2, reset_s=None), tokens=None)
    assert rate_limits_from_headers({"x-ratelimit-remaining-requests": "lots"}) == RateLimits()


@pytest.mark.parametrize("seconds", [0.02, 0.5, 1.0, 7.25, 61.0, 360.0])
def test_the_fake_servers_durations_read_back(seconds: float) -> None:
    assert parse_duration_s(go_duration(seconds)) == pytest.approx(seconds, rel=0.01, abs=0.001)


# ------------------------------------------------------------------------------------------ pacer


def test_the_pacer_learns_a_budget_from_the_limit_header_and_follows_what_is_left() -> None:
    clock = FakeClock()
    pacer = Pacer(clock=clock)
    assert not pacer.active and pacer.delay() == 0.0
    pacer.observe(RateLimits(requests=Allowance(remaining=0, limit=60, reset_s=60.0)))
    assert pacer.active and pacer.rate == pytest.approx(1.0)
    assert pacer.delay() == pytest.approx(1.0)  # nothing left: wait for the next unit, not the whole minute
    clock.now = 10.0
    pacer.observe(RateLimits(requests=Allowance(remaining=0.5, limit=60, reset_s=30.0)))
    assert pacer.delay() == pytest.approx(0.5)


def test_a_set_budget_is_kept_but_never_more_than_the_provider_says_is_left() -> None:
    clock = FakeClock()
    pacer = Pacer(600, clock=clock)  # 10 a second, burst 10
    pacer.observe(RateLimits(requests=Allowance(remaining=2, limit=10_000)))
    assert pacer.rate == pytest.approx(10.0)  # the suite's budget stays
    assert [pacer.delay() for _ in range(3)] == [0.0, 0.0, pytest.approx(0.1)]


def test_without_a_limit_nothing_left_holds_until_the_reset() -> None:
    clock = FakeClock()
    pacer = Pacer(6000, clock=clock)
    pacer.observe(RateLimits(requests=Allowance(remaining=0, reset_s=3.0)))
    assert pacer.delay() == pytest.approx(3.0)
    clock.now = 3.0
    assert pacer.delay() == pytest.approx(0.0, abs=0.02)


def test_a_token_budget_counts_tokens() -> None:
    clock = FakeClock()
    pacer = Pacer(tokens_per_minute=6000, clock=clock)  # 100 tokens a second, burst 100
    assert pacer.delay(tokens=100) == 0.0
    assert pacer.delay(tokens=50) == pytest.approx(0.5)
    assert pacer.delay(tokens=0) == 0.0  # no token budget spent, no request budget set


def test_learning_can_be_turned_off() -> None:
    pacer = Pacer(learn=False)
    pacer.observe(RateLimits(requests=Allowance(remaining=0, limit=60, reset_s=60.0)))
    assert not pacer.active


async def test_pace_from_headers_false_ignores_them() -> None:
    budget = ServerBudget(rpm=600, burst_requests=600)
    async with FakeLLMServer(budget=budget) as server:
        hub = _hub(server, pace_from_headers=False)
        client, _ = hub.client("openai:fake")
        response = await client.generate(REQUEST)
        await hub.aclose()
    assert response.rate_limits is not None  # the headers came
    assert not client.pacer.active  # and were not followed


# ------------------------------------------------------------------------------------------ limiter


def _release(limiter: AdaptiveLimiter, pattern: list[bool]) -> None:
    """Answers one at a time, each sent after the last came back (a 429 is True)."""
    for limited in pattern:
        generation = limiter._generation
        limiter.in_flight += 1
        limiter.sent += 1
        limiter.release(generation, rate_limited=limited, succeeded=not limited)


@pytest.mark.parametrize("every", [10, 20, 33])
def test_isolated_429s_never_cut_the_limit(every: int) -> None:
    limiter = AdaptiveLimiter(400)
    _release(limiter, [index % every == 0 for index in range(5000)])  # 3-10% of answers, spread out
    assert (limiter.cuts, limiter.limit) == (0, 400)


def test_bursts_cut_but_never_below_the_floor() -> None:
    limiter = AdaptiveLimiter(400)
    assert limiter.minimum == 100
    for _ in range(10):
        _release(limiter, [True] * 30)
    assert limiter.cuts >= 2 and limiter.lowest == 100 and limiter.limit == 100
    small = AdaptiveLimiter(3)
    _release(small, [True] * 50)
    assert small.minimum == 1 and small.lowest == 1


def test_min_connections_setting_sets_the_floor() -> None:
    hub = ModelHub(
        {"openai": ProviderSettings(base_url="http://127.0.0.1:9/v1", max_connections=40, min_connections=30)}
    )
    client, _ = hub.client("openai:fake")
    assert client.limiter.minimum == 30


# ------------------------------------------------------------------------------------------ end to end


def _hub(server: FakeLLMServer, **settings: object) -> ModelHub:
    defaults: dict[str, object] = {
        "base_url": server.openai_base_url,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.05,
        "max_attempts": 20,
    }
    return ModelHub({"openai": ProviderSettings.model_validate({**defaults, **settings})})


async def test_with_a_set_budget_the_engine_never_exceeds_the_providers_bucket() -> None:
    # 20 a second, as the pacer's bucket; some requests more of burst absorb the jitter of arrival times
    # (the first wave opens connections, so it arrives later than the ones after it, and a busy CI machine
    # can stall the event loop and deliver a few paced requests together)
    budget = ServerBudget(rpm=1200, burst_requests=32)
    async with FakeLLMServer(budget=budget) as server:
        hub = _hub(server, rpm=1200, max_connections=32)
        client, _ = hub.client("openai:fake")
        responses = await asyncio.gather(*(client.generate(REQUEST) for _ in range(60)))
        await hub.aclose()
    assert len(responses) == 60 and all(r.text for r in responses)
    assert budget.rejected == 0 and client.stats.rate_limits == 0
    assert responses[-1].rate_limits is not None  # the headers reached the response


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_budget_learned_from_headers_is_kept_and_the_run_finishes(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    budget = ServerBudget(rpm=1200, burst_requests=20)
    async with FakeLLMServer(budget=budget) as server:
        url = server.openai_base_url if api == "openai" else server.base_url
        hub = ModelHub(
            {api: ProviderSettings(base_url=url, max_connections=8, backoff_initial_s=0.01, max_attempts=20)}
        )
        client, _ = hub.client(f"{api}:fake")
        loop = asyncio.get_running_loop()
        started = loop.time()
        responses = await asyncio.gather(*(client.generate(REQUEST) for _ in range(80)))
        elapsed = loop.time() - started
        await hub.aclose()
    assert len(responses) == 80 and client.stats.failed == 0
    assert client.pacer.rate == pytest.approx(20.0)  # 1200 a minute, read from the limit header
    # Paced after the first answers: the provider refused few if any, and 80 calls took at least the
    # time the budget allows beyond its burst of 20.
    assert budget.rejected <= 4
    assert elapsed >= (80 - 20) / 20 * 0.9


async def test_random_429s_do_not_drive_the_limit_below_its_floor() -> None:
    faults = FaultConfig(error_429=0.05, retry_after_s=0.001)
    async with FakeLLMServer(faults=faults, seed=7) as server:
        hub = _hub(server, max_connections=40)
        client, _ = hub.client("openai:fake")
        await asyncio.gather(*(client.generate(REQUEST) for _ in range(600)))
        await hub.aclose()
    limiter = client.limiter
    assert client.stats.rate_limits > 10  # the faults happened and were retried
    assert client.stats.failed == 0
    assert limiter.lowest >= limiter.minimum == 10
    assert limiter.limit >= 20  # not collapsed: at most one stray cut at 5% random 429s


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_fake_providers_buckets_refuse_beyond_the_budget_and_say_so_in_headers(api: str) -> None:
    budget = ServerBudget(rpm=60, tpm=6000, burst_requests=2, burst_tokens=1000)
    wait, headers = budget.admit(api, 400, now=0.0)  # type: ignore[arg-type]
    assert wait == 0.0
    limits = rate_limits_from_headers(headers)
    assert limits is not None and limits.requests is not None and limits.tokens is not None
    assert (limits.requests.remaining, limits.requests.limit) == (1, 60)
    assert (limits.tokens.remaining, limits.tokens.limit) == (600, 6000)
    assert budget.admit(api, 400, now=0.0)[0] == 0.0  # type: ignore[arg-type]
    wait, headers = budget.admit(api, 100, now=0.0)  # type: ignore[arg-type]
    assert wait == pytest.approx(1.0)  # tokens enough, but no request left: one refills in a second
    assert budget.rejected == 1
    wait, _ = budget.admit(api, 900, now=1.0)  # type: ignore[arg-type]
    assert wait == pytest.approx((900 - 300) / 100)  # 200 tokens left + 100 refilled; 100 a second


async def test_a_retry_goes_to_the_front_of_the_queue() -> None:
    limiter = AdaptiveLimiter(1)
    held = await limiter.acquire()
    order: list[str] = []

    async def take(name: str, first: bool) -> None:
        generation = await limiter.acquire(first=first)
        order.append(name)
        limiter.release(generation, succeeded=True)

    tasks = [asyncio.create_task(take(f"fresh-{i}", True)) for i in range(3)]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(take("retry", False)))
    await asyncio.sleep(0)
    limiter.release(held, succeeded=True)
    await asyncio.gather(*tasks)
    assert order == ["retry", "fresh-0", "fresh-1", "fresh-2"]


@pytest.mark.parametrize(
    ("arrivals", "expected"),
    [
        # (name, since, first) in arrival order -> the order they get the slot
        ([("new", 30.0, True), ("old", 10.0, True), ("mid", 20.0, True)], ["old", "mid", "new"]),
        ([("a", 5.0, True), ("b", 5.0, True), ("c", 5.0, True)], ["a", "b", "c"]),  # ties: arrival order
        ([("young", 9.0, True), ("retry", 50.0, False), ("old", 1.0, True)], ["retry", "old", "young"]),
        ([("late", 2.0, True), ("early", 1.0, True), ("retry-1", 7.0, False), ("retry-2", 3.0, False)],
         ["retry-1", "retry-2", "early", "late"]),
    ],
)  # fmt: skip
async def test_waiting_calls_are_served_oldest_work_first(
    arrivals: list[tuple[str, float, bool]], expected: list[str]
) -> None:
    """A conversation held back by a Retry-After is not overtaken by conversations that began after it."""
    limiter = AdaptiveLimiter(1)
    held = await limiter.acquire()
    order: list[str] = []

    async def take(name: str, since: float, first: bool) -> None:
        generation = await limiter.acquire(first=first, since=since)
        order.append(name)
        limiter.release(generation, succeeded=True)

    tasks = []
    for name, since, first in arrivals:
        tasks.append(asyncio.create_task(take(name, since, first)))
        await asyncio.sleep(0)
    limiter.release(held, succeeded=True)
    await asyncio.gather(*tasks)
    assert order == expected


async def test_a_judge_call_is_as_old_as_its_conversation() -> None:
    from simulator.providers.hub import CallScope, call_scope, current_scope, set_scope

    set_scope(CallScope(repeat=2, since=123.0))
    with call_scope(repeat=2, sample=1):
        scope = current_scope()
        assert scope is not None and scope.since == 123.0 and scope.sample == 1
    set_scope(None)
    with call_scope(repeat=0) as fresh:
        assert fresh.since > 123.0  # no enclosing work: it begins now
