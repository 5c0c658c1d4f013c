"""Command line for the fake LLM server: `python -m simulator.testing.fake_server --help`."""

from __future__ import annotations

__all__ = ["build_parser", "main"]

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from simulator.eventloop import run_async
from simulator.listening import exit_on_unlistenable
from simulator.testing.fake_llm import FakeLLMServer, FaultConfig, LatencyModel
from simulator.testing.fake_llm_budget import ServerBudget
from simulator.visible import TerminalParser, echo


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share between 0 and 1, got {text}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The CLI's options; every fault share is per request and drawn from the seeded generator."""
    parser = TerminalParser(
        prog="python -m simulator.testing.fake_server",
        description="A fake LLM server speaking the Anthropic Messages and OpenAI Chat Completions APIs. "
        "Point the anthropic SDK at the printed URL, the openai SDK at URL/v1.",
    )
    add = parser.add_argument
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    add("--port", type=int, default=0, help="port to bind; 0 picks a free one (default 0)")
    add("--latency-ms", type=_non_negative, default=0.0, help="delay before the first byte, ms (default 0)")
    add("--latency-jitter-ms", type=_non_negative, default=0.0, help="uniform jitter +/- around --latency-ms")
    add(
        "--tps",
        type=float,
        default=None,
        help="output tokens per second: adds output_tokens/tps to each reply",
    )
    add("--error-500", type=_share, default=0.0, help="share of requests answered 500 (default 0)")
    add("--error-429", type=_share, default=0.0, help="share of requests answered 429 (default 0)")
    add(
        "--retry-after",
        type=_non_negative,
        default=1.0,
        help="Retry-After seconds sent with 429s (default 1)",
    )
    add(
        "--timeout-share",
        type=_share,
        default=0.0,
        help="share of requests held --timeout-s before answering",
    )
    add("--timeout-s", type=_non_negative, default=30.0, help="how long a held request waits (default 30)")
    add("--malformed", type=_share, default=0.0, help="share of requests answered with invalid JSON")
    refuse = "answer OpenAI json_schema response_format with 500 like llama.cpp (json_object still works)"
    add("--refuse-json-schema", action="store_true", help=refuse)
    add("--rpm", type=float, default=None, help="a rate limit: requests per minute (429 with headers beyond)")
    add("--tpm", type=float, default=None, help="a rate limit: tokens (input + max_tokens) per minute")
    add("--burst", type=float, default=None, help="requests the rpm bucket saves up (default a minute's)")
    add("--no-rate-headers", action="store_true", help="send no rate-limit headers (as many gateways do)")
    add(
        "--budget-retry-after",
        type=_non_negative,
        default=None,
        help="Retry-After of the budget's 429s, seconds (default: the exact wait)",
    )
    add("--retry-after-date", action="store_true", help="send every Retry-After as an HTTP date")
    add("--instant-429", action="store_true", help="answer the random 429s at once, without the latency")
    add("--state-limit", action="store_true", help="the budget's 429 message names its limit (as OpenAI's)")
    add("--seed", type=int, default=0, help="seed for latency and fault draws (default 0)")
    add(
        "--log",
        type=Path,
        default=None,
        help="append one JSON line per request to this file (header names only)",
    )
    return parser


def _server(args: argparse.Namespace) -> FakeLLMServer:
    low = max(0.0, args.latency_ms - args.latency_jitter_ms) / 1000
    high = (args.latency_ms + args.latency_jitter_ms) / 1000
    latency = LatencyModel.uniform(low, high) if args.latency_jitter_ms else LatencyModel.fixed(low)
    faults = FaultConfig(
        error_500=args.error_500,
        error_429=args.error_429,
        timeout=args.timeout_share,
        malformed=args.malformed,
        retry_after_s=args.retry_after,
        retry_after_date=args.retry_after_date,
        instant_429=args.instant_429,
        timeout_s=args.timeout_s,
    )
    budget = None
    if args.rpm or args.tpm:
        budget = ServerBudget(
            args.rpm,
            args.tpm,
            burst_requests=args.burst,
            send_headers=not args.no_rate_headers,
            retry_after_s=args.budget_retry_after,
            retry_after_date=args.retry_after_date,
            state_limit=args.state_limit,
        )
    return FakeLLMServer(
        latency=latency,
        tokens_per_second=args.tps,
        faults=faults,
        refuse_json_schema=args.refuse_json_schema,
        seed=args.seed,
        request_log=args.log,
        host=args.host,
        port=args.port,
        budget=budget,
        address_fixes=("--port {0}", "--host {0}"),
    )


async def _serve(server: FakeLLMServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        echo(f"fake LLM server listening on {server.base_url}", flush=True)
        echo(f"  anthropic: base_url={server.base_url}", flush=True)
        echo(f"  openai:    base_url={server.openai_base_url}", flush=True)
        await stop.wait()
    echo(f"stopped after {len(server.calls)} requests", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C or SIGTERM; exit 0 then, 2 on bad options or an address it cannot listen on."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.error_500 + args.error_429 + args.timeout_share + args.malformed > 1.0:
        parser.error(
            "the fault shares (--error-500, --error-429, --timeout-share, --malformed) sum to more than 1"
        )
    if args.tps is not None and args.tps <= 0:
        parser.error("--tps must be positive")
    with exit_on_unlistenable():  # a port taken, a host not this machine's: one line, exit 2
        run_async(_serve(_server(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
