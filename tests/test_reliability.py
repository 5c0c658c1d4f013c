"""Retries, the adaptive connection limit, errors as data and --max-errors, through the real openai SDK
talking to the fake LLM server."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from tenacity import RetryCallState

from simulator.cli import main as cli_main
from simulator.config.loading import load_scenarios
from simulator.config.suite import ProviderSettings, load_suite
from simulator.engine.budget import ErrorBudget
from simulator.engine.runner import RunOptions, parse_max_errors, run_suite
from simulator.providers._http import retry_after_s
from simulator.providers.base import ChatMessage, ModelRequest, ProviderError
from simulator.providers.hub import ModelClient, ModelHub
from simulator.providers.limiter import AdaptiveLimiter
from simulator.record.folder import RunFolder
from simulator.testing.fake_llm import FakeCall, FakeLLMServer, FakeReply, FaultConfig
from tests._reliability_fixtures import triage_responder, write_suite

REQUEST = ModelRequest(model="fake", messages=[ChatMessage(role="user", content="hello")])


def client_for(server: FakeLLMServer, **settings: float) -> ModelClient:
    base = {"base_url": server.openai_base_url, "backoff_initial_s": 0.01, "backoff_max_s": 0.02}
    hub = ModelHub({"openai": ProviderSettings(**{**base, **settings})})  # type: ignore[arg-type]
    return hub.client("openai:fake")[0]


# ------------------------------------------------------------------------------------------ retries


@pytest.mark.parametrize("kind", ["error_429", "error_500", "timeout"])
async def test_rate_limits_server_errors_and_timeouts_are_retried(kind: str) -> None:
    faults = FaultConfig(fail_first_n=2, fail_first_kind=kind, retry_after_s=0.01, timeout_s=5)  # type: ignore[arg-type]
    async with FakeLLMServer(faults=faults) as server:
        client = client_for(server, max_attempts=4, timeout_s=0.3)
        response = await client.generate(REQUEST)
        await client.provider.aclose()
    assert response.text == "Fake reply to: hello"
    assert len(server.calls) == 3
    assert client.stats.retries == 2
    assert client.stats.rate_limits == (2 if kind == "error_429" else 0)
    assert client.stats.transient_errors == (0 if kind == "error_429" else 2)


@pytest.mark.parametrize(
    ("status", "fix"),
    [
        (401, "check OPENAI_API_KEY"),
        (400, "the server answered 400: no; check the request settings"),
        (404, "the server answered 404: no; check the model name and the base_url"),
    ],
)
async def test_permanent_errors_are_not_retried_and_say_what_to_fix(status: int, fix: str) -> None:
    async with FakeLLMServer(lambda call: FakeReply(status=status, text="no")) as server:
        client = client_for(server, max_attempts=5)
        with pytest.raises(ProviderError) as raised:
            await client.generate(REQUEST)
        await client.provider.aclose()
    assert raised.value.kind == "permanent"
    assert fix in str(raised.value)
    assert len(server.calls) == 1
    assert client.stats.failed == 1


async def test_retries_are_bounded_in_attempts() -> None:
    async with FakeLLMServer(faults=FaultConfig(error_500=1.0)) as server:
        client = client_for(server, max_attempts=3)
        with pytest.raises(ProviderError) as raised:
            await client.generate(REQUEST)
        await client.provider.aclose()
    assert len(server.calls) == 3
    assert raised.value.kind == "transient"
    assert "gave up after 3 attempts" in str(raised.value)


async def test_retries_are_bounded_in_time_before_a_long_retry_after() -> None:
    # The server asks for 60 s; waiting would overrun rate_limit_retry_s, so the call gives up at once.
    faults = FaultConfig(error_429=1.0, retry_after_s=60)
    async with FakeLLMServer(faults=faults) as server:
        client = client_for(server, max_attempts=10, rate_limit_retry_s=1.0)
        with pytest.raises(ProviderError) as raised:
            await client.generate(REQUEST)
        await client.provider.aclose()
    assert len(server.calls) == 1
    assert raised.value.kind == "rate_limit"
    assert raised.value.retry_after == 60


def test_retry_after_in_seconds_milliseconds_or_as_an_http_date() -> None:
    assert retry_after_s({"retry-after": "7"}) == 7.0
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after_s({"retry-after": later}) or 0) <= 30
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def _state_after(client: ModelClient, attempt: int, error: BaseException) -> RetryCallState:
    state = RetryCallState(retry_object=None, fn=None, args=(), kwargs={})  # type: ignore[arg-type]
    state.attempt_number = attempt
    state.set_exception((type(error), error, None))
    return state


async def test_backoff_grows_with_jitter_and_retry_after_is_waited_as_said() -> None:
    settings = ProviderSettings(backoff_initial_s=1.0, backoff_max_s=8.0)
    client = ModelClient.__new__(ModelClient)
    client.settings = settings
    transient = ProviderError("transient", "503")
    waits = {n: [client._wait(_state_after(client, n, transient)) for _ in range(50)] for n in (1, 2, 3, 6)}
    assert all(0.5 <= w <= 1.0 for w in waits[1])
    assert all(1.0 <= w <= 2.0 for w in waits[2])
    assert all(2.0 <= w <= 4.0 for w in waits[3])
    assert all(4.0 <= w <= 8.0 for w in waits[6])  # capped at backoff_max_s
    assert len(set(waits[3])) > 1  # jittered
    limited = ProviderError("rate_limit", "429", retry_after=30.0)
    assert all(30.0 <= client._wait(_state_after(client, 1, limited)) <= 33.0 for _ in range(20))
    # The server's word wins over the backoff both ways: a later attempt waits what it was told, not
    # the doubled backoff (4-8 s at attempt 6), so random 429s do not stretch a conversation.
    for attempt, told in ((2, 1.0), (3, 0.5), (6, 1.5)):
        said = ProviderError("rate_limit", "429", retry_after=told)
        waits_told = [client._wait(_state_after(client, attempt, said)) for _ in range(20)]
        assert all(told <= w <= told * 1.1 for w in waits_told) and len(set(waits_told)) > 1


# ------------------------------------------------------------------------------------------ concurrency


async def test_limiter_halves_once_per_window_and_grows_back() -> None:
    limiter = AdaptiveLimiter(8, minimum=1, min_refused=1, burst_share=0.01)  # every 429 is a burst
    generations = [await limiter.acquire() for _ in range(8)]
    assert limiter.in_flight == 8
    for generation in generations[:5]:  # a burst of 429s from calls sent under the same limit
        limiter.release(generation, rate_limited=True)
    assert (limiter.limit, limiter.cuts) == (4, 1)
    for generation in generations[5:]:
        limiter.release(generation, succeeded=True)
    later = await limiter.acquire()  # sent after the cut: its 429 is news
    limiter.release(later, rate_limited=True)
    assert (limiter.limit, limiter.cuts, limiter.lowest) == (2, 2, 2)
    for _ in range(2 + 3 + 4 + 5 + 6 + 7):  # `limit` successes per extra slot
        generation = await limiter.acquire()
        limiter.release(generation, succeeded=True)
    assert limiter.limit == 8
    assert limiter.in_flight == 0


async def test_limiter_queues_beyond_the_limit_and_survives_cancelled_waiters() -> None:
    limiter = AdaptiveLimiter(2)
    first, second = await limiter.acquire(), await limiter.acquire()
    waiting = [asyncio.create_task(limiter.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    assert limiter.in_flight == 2 and not any(task.done() for task in waiting)
    waiting[0].cancel()
    limiter.release(first, succeeded=True)
    await asyncio.sleep(0)
    assert [task.done() for task in waiting] == [True, True, False]
    assert waiting[0].cancelled()
    limiter.release(second, succeeded=True)
    await asyncio.sleep(0)
    assert waiting[2].done() and limiter.in_flight == 2


@pytest.mark.parametrize("queued", [1, 3, 6])
async def test_a_limiter_whose_waiters_were_all_cancelled_still_admits_new_calls(queued: int) -> None:
    limiter = AdaptiveLimiter(1)
    held = await limiter.acquire()
    waiting = [asyncio.create_task(limiter.acquire(since=float(i))) for i in range(queued)]
    await asyncio.sleep(0)
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    limiter.release(held, succeeded=True)
    assert limiter.in_flight == 0
    # A fresh call with nothing in flight must get its slot at once, not wait behind cancelled entries.
    generation = await asyncio.wait_for(limiter.acquire(), timeout=1.0)
    assert limiter.in_flight == 1
    limiter.release(generation, succeeded=True)


async def test_users_bots_and_judges_share_one_connection_limit() -> None:
    in_flight = peak = 0

    async def slow(call: FakeCall) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return "ok"

    async with FakeLLMServer(slow) as server:
        hub = ModelHub({"openai": ProviderSettings(base_url=server.openai_base_url, max_connections=3)})
        clients = [hub.for_role(role).client(f"openai:{role}")[0] for role in ("user", "bot", "judge")]
        assert clients[0].limiter is clients[1].limiter is clients[2].limiter
        await asyncio.gather(*(clients[i % 3].generate(REQUEST) for i in range(30)))
        await hub.aclose()
    assert len(server.calls) == 30
    assert peak == 3


async def test_a_burst_of_rate_limits_cuts_concurrency_which_then_recovers() -> None:
    faults = FaultConfig(fail_first_n=12, fail_first_kind="error_429", retry_after_s=0.01)
    async with FakeLLMServer(faults=faults) as server:
        client = client_for(server, max_connections=8, max_attempts=20)
        await asyncio.gather(*(client.generate(REQUEST) for _ in range(16)))
        assert client.limiter.cuts >= 1 and client.limiter.lowest < 8
        for _ in range(10):
            await asyncio.gather(*(client.generate(REQUEST) for _ in range(16)))
        await client.provider.aclose()
    assert client.limiter.limit == 8
    assert client.stats.rate_limits == 12


# ------------------------------------------------------------------------------------------ errors are data


def _bot_fails_on_second_chest_turn(call: FakeCall) -> FakeReply | str:
    users = [m.content for m in call.messages if m.role == "user"]
    if call.tools and len(users) == 2 and "chest" in users[0]:
        return FakeReply(status=503, text="overloaded")
    return triage_responder(call)


async def test_a_conversation_whose_bot_fails_is_recorded_with_its_cause_and_turns(tmp_path: Path) -> None:
    async with FakeLLMServer(_bot_fails_on_second_chest_turn) as server:
        suite = load_suite(write_suite(tmp_path / "suite", server.openai_base_url, runs=2))
        scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
        result = await run_suite(suite, scenarios, RunOptions(out=tmp_path / "run", progress=False))
    folder = RunFolder(tmp_path / "run")
    records = {r.id: r for r in folder.conversations()}
    assert result.status == "complete" and result.errors == 2 and len(records) == 6
    failed = records["chest#0"]
    assert failed.stop_reason == "error"
    assert failed.error is not None and failed.error.source == "bot"
    assert "gave up after 4 attempts" in failed.error.message and "overloaded" in failed.error.message
    assert [t.role for t in failed.turns] == ["user", "bot", "user"]  # the turns it had
    verdicts = list(folder.verdicts())
    assert {v.result for v in verdicts if v.scenario_id == "chest"} == {"not_judged"}  # not a pass or fail
    assert {v.result for v in verdicts if v.scenario_id != "chest" and v.kind != "fidelity"} == {"pass"}
    manifest = folder.read_manifest()
    assert manifest.counts.errors == 2
    assert manifest.total_calls()["openai"].retries == 2 * 3


def test_every_call_401_aborts_early_with_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLLMServer(lambda call: FakeReply(status=401, text="invalid key")) as server:
        suite = write_suite(tmp_path / "suite", server.openai_base_url, runs=30, concurrency=4)
        code = cli_main(["run", str(suite), "--out", str(tmp_path / "run"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith(
        "error: run aborted: the first 10 items all failed (last: bot: provider_permanent: "
    )
    assert "check OPENAI_API_KEY" in err and f"--resume {tmp_path / 'run'} --retry-errors" in err
    assert len(server.calls) < 10 + 4  # 90 were planned: it stopped promptly
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "aborted"


def test_max_errors_as_a_share_aborts_and_off_never_does(tmp_path: Path) -> None:
    with FakeLLMServer(_bot_fails_on_second_chest_turn) as server:  # one scenario in three fails
        suite = write_suite(tmp_path / "suite", server.openai_base_url, runs=10, concurrency=2)
        args = ["run", str(suite), "--no-progress", "--max-errors"]
        assert cli_main([*args, "20%", "--out", str(tmp_path / "a")]) == 2
        assert cli_main([*args, "off", "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["status"] == "aborted"
    finished = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert (
        finished["status"] == "complete" and finished["counts"]["errors"] == 10
    )  # typed RunCounts, same JSON shape


def test_max_errors_values() -> None:
    assert parse_max_errors("10") == 10
    assert parse_max_errors("0") == 0
    assert parse_max_errors("0.05") == pytest.approx(0.05)
    assert parse_max_errors("5%") == pytest.approx(0.05)
    assert parse_max_errors("off") == math.inf
    for bad in ("-1", "2.5", "150%", "many"):
        with pytest.raises(ValueError, match="--max-errors takes"):
            parse_max_errors(bad)


def _budget_after(limit: float | None, outcomes: str) -> str | None:
    """The stop reason after a sequence of finished items: `x` failed, `.` passed."""
    budget = ErrorBudget(limit)
    for outcome in outcomes:
        budget.account("boom" if outcome == "x" else None)
    return budget.reason


def test_error_budget() -> None:
    assert (_budget_after(None, "x" * 10) or "").startswith("the first 10 items all failed")
    assert (_budget_after(None, "." * 20 + "x" * 10) or "").startswith("the last 10 items all failed")
    assert _budget_after(None, "..." + "x" * 9) is None
    assert _budget_after(5, "x" * 5 + "." * 95) is None
    assert _budget_after(5, "x" * 6) is not None
    assert _budget_after(0, "x") is not None
    assert _budget_after(0.1, "xx" + "." * 7) is None  # too few finished to judge a share
    assert _budget_after(0.1, "." * 8 + "xx") is not None
    assert _budget_after(math.inf, "x" * 99) is None
