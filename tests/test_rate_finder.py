"""Rate limits as providers impose them, through the real SDKs against the fake LLM server: a rate found
from 429s that carry no headers, random 429s that change nothing, patience with rate limits."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from simulator.config.providers import ProviderSettings
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.hub import ModelClient, ModelHub
from simulator.providers.ratefinder import RateFinder, limit_in_message
from simulator.testing.fake_llm import FakeLLMServer, FakeReply, FaultConfig, LatencyModel, ServerBudget
from tests.support.waiting import LATE_S

REQUEST = ModelRequest(model="fake", messages=[ChatMessage(role="user", content="hello")], max_tokens=50)


def _client(server: FakeLLMServer, api: str, **settings: object) -> ModelClient:
    url = server.openai_base_url if api == "openai" else server.base_url
    hub = ModelHub(
        {api: ProviderSettings.model_validate({"base_url": url, "max_connections": 100, **settings})}
    )
    return hub.client(f"{api}:fake")[0]


async def _load(
    client: ModelClient, seconds: float, workers: int, seen: dict[str, object] | None = None
) -> list[float]:
    """`workers` callers, each calling again as soon as answered, for `seconds`; when each answer came.
    `seen` gets the pacer's figures as the load ends (before the last calls drain)."""
    start = time.monotonic()
    answered: list[float] = []

    async def snapshot() -> None:
        await asyncio.sleep(seconds)
        if seen is not None:
            seen.update(client.pacer.describe())

    async def worker() -> None:
        while time.monotonic() - start < seconds:
            await client.generate(REQUEST)
            answered.append(time.monotonic() - start)

    # Bounded: a pace that collapsed would fail here, not hang the suite.
    callers = asyncio.gather(snapshot(), *(worker() for _ in range(workers)))
    await asyncio.wait_for(callers, timeout=seconds + 30)
    return answered


async def _through_the_error_path(api: str) -> None:
    """One call answered with an error, before a measured load: the first error answer imports the SDK
    (`providers/_sdkbase.py`: the wire path needs the SDK only to raise its exception), on the event loop.
    anthropic's import costs about 2 s of CPU (openai's about 0.7 s); inside the measured window, on a
    loaded machine, that is most of the window with nothing sent or answered (the fake server shares the
    loop), and the provider's bucket refills past its burst, unused: the figures measured the import."""
    async with FakeLLMServer(faults=FaultConfig(error_500=1.0)) as server:
        client = _client(server, api, max_attempts=1)  # the error once, not retried
        with pytest.raises(ProviderError):
            await client.generate(REQUEST)
        await client.provider.aclose()


# ------------------------------------------------------------------------------------------ finding the rate


# Both wire formats at a planted rate; faster rates are a bench line (`--rate-limit`): on a loaded test
# machine they measure how fast the machine can send as much as how well the finder finds.
@pytest.mark.parametrize(("api", "rpm"), [("openai", 1200), ("anthropic", 1200)])
async def test_a_planted_rate_without_headers_is_found_within_15_percent(
    api: str, rpm: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    # The SDK imported first, as in a run that already met an error: the window measures the finder, not the
    # import its first 429 would otherwise do in the middle of it (whichever test of the process came first).
    await _through_the_error_path(api)
    # A token bucket of `rpm` with a burst of 10, no rate-limit headers, "Retry-After: 1": the shape.
    budget = ServerBudget(rpm=rpm, burst_requests=10, send_headers=False, retry_after_s=1.0)
    async with FakeLLMServer(budget=budget, latency=LatencyModel.fixed(0.02)) as server:
        client = _client(server, api)
        seen: dict[str, object] = {}
        answered = await _load(client, seconds=12.0, workers=80, seen=seen)
        await client.provider.aclose()
    assert seen["rpm_source"] == "found from 429s"
    # What it delivered while saturated, else (never refused again once found) the pace it settled on:
    # within 15% of the planted rate, never below; above it by no more than the bucket's burst in a period,
    # what the provider saves up while a busy machine stalls the loop it shares with the client.
    found = float(seen.get("observed_rpm", seen["rpm"]))  # type: ignore[arg-type]
    assert 0.85 * rpm <= found <= 1.15 * rpm + 60 * budget.burst_requests / RateFinder().period_s
    assert client.pacer.rate * 60 == pytest.approx(rpm, rel=0.25)  # the pace itself saw-tooths around it
    assert client.stats.failed == 0  # every call got through
    late = [t for t in answered if 6.0 <= t < 12.0]  # once found, the provider is kept busy
    assert len(late) / 6.0 >= 0.85 * rpm / 60
    assert budget.rejected < budget.admitted  # most calls sent were taken, the start-up storm included


async def test_a_token_budget_said_in_the_429s_message_is_paced_in_tokens() -> None:
    # 60 tokens per request (10 of input, 50 of max_tokens): 12,000 a minute is 200 requests a minute.
    await _through_the_error_path("openai")  # the same class as above: no import inside the measured window
    budget = ServerBudget(tpm=12_000, burst_tokens=300, send_headers=False, retry_after_s=0.5)
    async with FakeLLMServer(budget=budget, latency=LatencyModel.fixed(0.01)) as server:
        client = _client(server, "openai")
        await _load(client, seconds=6.0, workers=30)
        await client.provider.aclose()
    seen = client.pacer.describe()
    assert seen["tpm_source"] == "found from 429s" and "rpm" not in seen
    assert client.stats.failed == 0
    assert float(seen["observed_tpm"]) == pytest.approx(12_000, rel=0.25)  # found, in tokens


async def test_a_limit_stated_in_the_429s_message_is_taken_as_said() -> None:
    budget = ServerBudget(rpm=1800, burst_requests=5, send_headers=False, retry_after_s=0.2, state_limit=True)
    async with FakeLLMServer(budget=budget) as server:
        client = _client(server, "openai")
        await asyncio.gather(*(client.generate(REQUEST) for _ in range(40)))
        await client.provider.aclose()
    assert client.pacer.describe()["rpm"] == 1800 and client.pacer.sources["requests"] == "429 message"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000", ("tokens", 30000)),
        ("Rate limit reached for gpt-4o on requests per min (RPM): Limit 500, Used 500", ("requests", 500)),
        ("This request would exceed the rate limit of 50,000 input tokens per minute", ("tokens", 50000)),
        ("Number of request tokens has exceeded your per-minute rate limit", ("tokens", None)),
        ("Too Many Requests", ("requests", None)),
        ("Rate limit reached on requests per day (RPD): Limit 10000", ("requests", None)),
    ],
)
def test_what_a_429_message_says_is_limited(message: str, expected: tuple[str, float | None]) -> None:
    assert limit_in_message(message) == expected


def test_the_finder_backs_off_on_sustained_429s_and_probes_up_when_none() -> None:
    finder = RateFinder(min_sends=10)
    now = 100.0
    finder.sent = 100
    for _ in range(90):  # a first wave of 100: 90 refused at once
        finder.refused(1, sent_at=now - 0.01, in_flight=100, now=now)
    assert finder.measuring and finder.rate is None
    finder.sent += 20  # the next second: 20 sent, 10 of them refused
    for _ in range(10):
        finder.refused(1, sent_at=now + 0.5, in_flight=10, now=now + 0.5)
    assert finder.tick(now + 1.0) and finder.rate == pytest.approx(10 * 1.05)
    rate = finder.rate
    finder.sent += 12  # paced: 12 sent, 3 refused, callers held back: down to what it took
    finder.held = finder.turns = 5
    for _ in range(3):
        finder.refused(1, sent_at=now + 1.5, in_flight=2, now=now + 1.5)
    assert finder.tick(now + 2.0) and finder.rate == pytest.approx(rate * 0.75 * 1.05)
    rate = finder.rate
    finder.sent += 12  # the period right after a cut is not judged: turns taken at the old rate go out
    finder.held = finder.turns = 5
    for _ in range(6):
        finder.refused(1, sent_at=now + 2.5, in_flight=2, now=now + 2.5)
    assert not finder.tick(now + 2.9) and not finder.tick(now + 3.0) and finder.rate == rate
    finder.sent += 12  # none refused, callers held back: probe up (slowly: a cut ended the ramp)
    finder.held = finder.turns = 5
    assert finder.tick(now + 4.0) and finder.rate == pytest.approx(rate * 1.05)
    rate = finder.rate
    finder.sent += 12  # none refused and nobody held back: the rate did not bind, nothing to learn
    assert not finder.tick(now + 5.0) and finder.rate == rate
    finder.sent += 12  # 429s of calls sent before this period count in no period of their own
    finder.held = finder.turns = 5
    for _ in range(6):
        finder.refused(1, sent_at=now + 4.5, in_flight=1, now=now + 5.5)
    assert finder.tick(now + 6.0) and finder.rate > rate


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
async def test_isolated_random_429s_answered_instantly_change_neither_limit(seed: int) -> None:
    # 5% of calls refused at once (ahead of the first wave's answers), Retry-After 10 ms.
    faults = FaultConfig(error_429=0.05, retry_after_s=0.01, instant_429=True)
    async with FakeLLMServer(faults=faults, seed=seed, latency=LatencyModel.fixed(0.05)) as server:
        client = _client(server, "openai", max_connections=100)
        await asyncio.gather(*(client.generate(REQUEST) for _ in range(400)))
        await client.provider.aclose()
    assert client.stats.rate_limits > 5 and client.stats.failed == 0  # they happened, were retried
    assert client.limiter.cuts == 0 and client.limiter.lowest == 100
    assert client.pacer.rate == 0.0 and not client.pacer.active  # no rate was set from noise


async def test_a_burst_still_cuts_the_connection_limit() -> None:
    faults = FaultConfig(fail_first_n=60, fail_first_kind="error_429", retry_after_s=0.01, instant_429=True)
    async with FakeLLMServer(faults=faults, latency=LatencyModel.fixed(0.02)) as server:
        client = _client(server, "openai", max_connections=40, find_rate=False)
        await asyncio.gather(*(client.generate(REQUEST) for _ in range(40)))
        await client.provider.aclose()
    assert client.limiter.cuts >= 1 and client.limiter.lowest < 40


# ------------------------------------------------------------------------------------------ patience


@pytest.mark.parametrize("status", [429, 529])
async def test_rate_limits_are_retried_past_max_attempts_within_their_time_budget(status: int) -> None:
    failures = {"left": 12}

    def responder(call: object) -> FakeReply | str:
        if failures["left"]:
            failures["left"] -= 1
            return FakeReply(status=status, text="overloaded" if status == 529 else "slow down")
        return "fine"

    async with FakeLLMServer(responder) as server:
        client = _client(server, "openai", max_attempts=3, backoff_initial_s=0.01, backoff_max_s=0.02)
        response = await client.generate(REQUEST)
        patient = _client(server, "openai", max_attempts=3, backoff_initial_s=0.01, rate_limit_retry_s=0.05)
        failures["left"] = 100
        with pytest.raises(ProviderError) as raised:
            await patient.generate(REQUEST)
        await client.provider.aclose()
        await patient.provider.aclose()
    assert response.text == "fine" and client.stats.retries == 12
    assert "gave up after" in str(raised.value) and "providers.openai.rpm" in str(raised.value)


@pytest.mark.parametrize("as_date", [False, True])
async def test_retry_after_in_seconds_or_as_an_http_date_is_waited_per_request(
    as_date: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[float] = []  # the waits the client chose, seen as it chose them
    choose = ModelClient._wait

    def spy(client: ModelClient, state: Any) -> float:
        chosen.append(choose(client, state))
        return chosen[-1]

    monkeypatch.setattr(ModelClient, "_wait", spy)
    faults = FaultConfig(
        fail_first_n=1, fail_first_kind="error_429", retry_after_s=1.0, retry_after_date=as_date
    )
    async with FakeLLMServer(faults=faults) as server:
        client = _client(server, "openai", backoff_initial_s=0.01)
        started = time.monotonic()
        await client.generate(REQUEST)
        elapsed = time.monotonic() - started
        await client.provider.aclose()
    assert len(server.calls) == 2
    # The server's word, not the 10 ms backoff (plus up to 10% jitter; a date has whole seconds) ...
    [wait] = chosen
    assert 0.9 <= wait <= (2.2 if as_date else 1.1)
    # ... and waited once: never less, late only by what a busy machine adds.
    assert 0.9 <= elapsed <= wait + LATE_S
