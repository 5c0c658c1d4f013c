"""Tokens, cost from the editable price table, latency median/p95 and failure rates by role."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from simulator.analysis.cost import PriceTable, classify_error, cost_latency, default_prices_path, load_prices
from simulator.analysis.rundata import load_run
from simulator.errors import UserError
from simulator.record.transcript import Turn, Usage
from simulator.stats.basic import median, percentile
from tests.test_report_support import make_judged_run, record, verdict, write_run


def _turn(
    index: int, role: str, latency: float, usage: Usage | None, model: str | None, ttft: float | None = None
) -> Turn:
    return Turn(
        index=index,
        role=role,  # type: ignore[arg-type]
        messages=["hello"],
        started_at=datetime.now(UTC),
        latency_s=latency,
        usage=usage,
        model=model,
        time_to_first_token_s=ttft,
    )


def test_the_shipped_price_table_loads_and_has_a_date_and_source() -> None:
    table = load_prices()
    assert default_prices_path().name == "prices.yaml"
    assert table.as_of and table.source.startswith("https://") and table.currency == "USD"
    assert table.models["openai:gpt-4.1-mini"].input == pytest.approx(0.40)


def test_price_lookup_matches_recorded_model_names() -> None:
    table = load_prices()
    assert table.lookup("anthropic:claude-sonnet-4-5") == (
        "anthropic:claude-sonnet-4-5",
        table.models["anthropic:claude-sonnet-4-5"],
    )
    assert table.lookup("claude-sonnet-4-5-20250929")[0] == "anthropic:claude-sonnet-4-5"  # type: ignore[index]
    assert table.lookup("gpt-4.1-mini-2025-04-14")[0] == "openai:gpt-4.1-mini"  # type: ignore[index]
    assert table.lookup("gpt-4.1-2025-04-14")[0] == "openai:gpt-4.1"  # type: ignore[index]
    assert table.lookup("local:smollm2")[0] == "local:*"  # type: ignore[index]
    assert table.lookup("mystery:model-9") is None


def test_cost_counts_cached_input_at_its_own_price() -> None:
    table = PriceTable.model_validate(
        {"as_of": "x", "source": "y", "models": {"p:m": {"input": 2.0, "output": 10.0, "cached_input": 0.5}}}
    )
    usage = Usage(input_tokens=1_000_000, cached_input_tokens=400_000, output_tokens=100_000)
    assert table.cost(table.models["p:m"], usage) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.1 * 10.0)
    no_cache_price = PriceTable.model_validate(
        {"as_of": "x", "source": "y", "models": {"p:m": {"input": 2.0, "output": 0}}}
    )
    assert no_cache_price.cost(no_cache_price.models["p:m"], usage) == pytest.approx(2.0)


def test_a_bad_price_file_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        textwrap.dedent(
            """
            as_of: "2025-01-01"
            source: me
            models:
              "openai:x": {input: 1.0, output: -2}
            """
        ),
        encoding="utf-8",
    )
    with pytest.raises(UserError) as info:
        load_prices(path)
    rendered = info.value.render()
    assert "prices.yaml:5" in rendered and "output" in rendered
    with pytest.raises(UserError, match="no such price file"):
        load_prices(tmp_path / "missing.yaml")


def test_judge_cost_and_latency_on_a_real_run(tmp_path: Path) -> None:
    run = make_judged_run(tmp_path)
    report = cost_latency(load_run(run), load_prices())
    roles = {r.role: r for r in report.roles}
    judge = roles["judge"]
    assert (judge.calls, judge.input_tokens, judge.cached_input_tokens, judge.output_tokens) == (
        57,
        57_000,
        22_800,
        5_700,
    )
    # claude-haiku-4-5: $1 input, $0.10 cached, $5 output per million tokens.
    assert judge.cost == pytest.approx(57 * (600 * 1.0 + 400 * 0.10 + 100 * 5.0) / 1e6)
    assert roles["user"].models == ["offline"] and roles["user"].cost == 0.0
    assert report.total_cost == pytest.approx(judge.cost)
    latency = {row.name: row for row in report.latency}
    judge_latencies = [1.5 + r for r in range(3) for _ in range(19)]
    assert latency["judge (per verdict)"].n == 57
    assert latency["judge (per verdict)"].median_s == pytest.approx(median(judge_latencies))
    assert latency["bot reply (per turn)"].n == 39
    assert latency["bot time to first token"].n == 0
    failures = {(f.role, f.failure): f for f in report.failures}
    assert (failures[("bot", "other")].rate.k, failures[("bot", "other")].rate.n) == (3, 42)
    assert failures[("judge", "timeout")].rate.k == 1
    assert failures[("bot", "timeout")].rate.k == 0 and failures[("bot", "timeout")].rate.bound is not None


def test_bot_and_user_tokens_by_model_ttft_p95_and_unpriced_models(tmp_path: Path) -> None:
    bot_usage = Usage(input_tokens=2000, output_tokens=200, cached_input_tokens=1000, calls=1)
    recs = []
    latencies, ttfts = [], []
    for i in range(10):
        latency, ttft = 0.5 + i * 0.1, 0.1 + i * 0.01
        latencies.append(latency)
        ttfts.append(ttft)
        recs.append(
            record(
                f"s{i}",
                turns=[
                    _turn(
                        0,
                        "user",
                        0.3,
                        Usage(input_tokens=500, output_tokens=50, calls=1),
                        "anthropic:claude-sonnet-4-5",
                    ),
                    _turn(0, "bot", latency, bot_usage, "gpt-4.1-mini-2025-04-14", ttft),
                ],
                user_model="anthropic:claude-sonnet-4-5",
                bot="chat:openai:gpt-4.1-mini",
                cache_hits={"user": 1},
            )
        )
    recs.append(
        record(
            "s10",
            stop_reason="error",
            error={"source": "bot", "kind": "provider_rate_limit", "message": "429"},
        )
    )
    verdicts = [
        verdict(recs[0], "c", "pass", judge_model="mystery:judge", usage=Usage(input_tokens=10, calls=1))
    ]
    write_run(tmp_path / "r", recs, verdicts)
    report = cost_latency(load_run(tmp_path / "r"), load_prices())
    roles = {r.role: r for r in report.roles}
    assert roles["bot"].cost == pytest.approx(10 * (1000 * 0.40 + 1000 * 0.10 + 200 * 1.60) / 1e6)
    assert roles["user"].cost == pytest.approx(10 * (500 * 3.0 + 50 * 15.0) / 1e6)
    assert roles["user"].cache_hits == 10
    assert roles["judge"].cost is None and roles["judge"].unpriced == ["mystery:judge"]
    assert report.total_cost is None  # never a total that silently leaves a model out
    stats = {row.name: row for row in report.latency}
    assert stats["bot reply (per turn)"].p95_s == pytest.approx(percentile(latencies, 95))
    assert stats["bot time to first token"].median_s == pytest.approx(median(ttfts))
    failures = {(f.role, f.failure): f for f in report.failures}
    assert (failures[("bot", "provider error")].rate.k, failures[("bot", "provider error")].rate.n) == (1, 11)


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        ("timeout", "", "timeout"),
        ("provider_transient", "Request timed out.", "timeout"),
        ("invalid_reply", "not JSON", "invalid output"),
        ("rate_limit", "", "provider error"),
        ("provider_permanent", "bad key", "provider error"),
        ("connection", "refused", "provider error"),
        ("bot_exception", "ValueError", "other"),
    ],
)
def test_error_classes(kind: str, message: str, expected: str) -> None:
    assert classify_error(kind, message) == expected


def test_user_tokens_off_the_turns_are_priced(tmp_path: Path) -> None:
    """The [END] call and discarded character-break attempts hold no turn, but they cost tokens."""
    turn_usage = Usage(input_tokens=500, output_tokens=50, calls=1)
    rec = record(
        "s0",
        turns=[_turn(0, "user", 0.3, turn_usage, "anthropic:claude-sonnet-4-5")],
        user_model="anthropic:claude-sonnet-4-5",
        usage_by_role={
            "user": {"input_tokens": 1000, "output_tokens": 60, "calls": 2},  # the turn + the [END] call
            "discarded": {"input_tokens": 300, "output_tokens": 30, "calls": 1},
        },
    )
    write_run(tmp_path / "r", [rec], [])
    roles = {r.role: r for r in cost_latency(load_run(tmp_path / "r"), load_prices()).roles}
    assert roles["user"].cost == pytest.approx((1300 * 3.0 + 90 * 15.0) / 1e6)


# ---- one rule for calls (issue 31, item 12) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "judge_calls"),
    [
        (["not_judged"] * 6, 0),  # no judge model: nothing was called
        (["not_judged", "not_judged", "pass"], 1),
        (["not_applicable", "fail", "error"], 2),  # the not_applicable was `applies_when`: no call
    ],
)
def test_calls_count_requests_that_were_made(tmp_path: Path, results: list[str], judge_calls: int) -> None:
    """The cost table listed "judge 408 calls" and "0/408 failed" for a demo with no judge model."""
    rec = record(
        "s0",
        turns=[_turn(0, "user", 0.0, None, "offline"), _turn(1, "bot", 0.1, None, None)],
        user_model="offline",
        bot="python:demo",
    )
    verdicts = []
    for i, result in enumerate(results):
        made = result not in ("not_judged", "not_applicable")
        fields = {"judge_model": "anthropic:claude-haiku-4-5", "usage": Usage(input_tokens=10, calls=1)}
        verdicts.append(
            verdict(
                rec, f"c{i}", result, **(fields if made else {}),
                decided_by="llm" if made else ("applies_when" if result == "not_applicable" else None),
            )
        )  # fmt: skip
    write_run(tmp_path / "r", [rec], verdicts)
    report = cost_latency(load_run(tmp_path / "r"), load_prices())
    roles = {r.role: r for r in report.roles}
    assert roles["judge"].calls == judge_calls
    assert roles["user"].calls == 0  # the offline user is rules in this process: no request
    assert roles["bot"].calls == 1
    failure_roles = {f.role for f in report.failures}
    assert ("judge" in failure_roles) == (judge_calls > 0) and "user" not in failure_roles


def test_the_report_states_the_rule_for_calls(tmp_path: Path) -> None:
    from rich.console import Console

    from simulator.report.model import build_report
    from simulator.report.terminal import render_terminal

    rec = record("s0", turns=[_turn(0, "user", 0.0, None, "offline")], user_model="offline")
    write_run(tmp_path / "r", [rec], [verdict(rec, "c", "not_judged")])
    console = Console(record=True, width=200)
    render_terminal(build_report(load_run(tmp_path / "r")), console)
    assert "Calls: requests actually made, to a model or to the bot" in console.export_text()
