"""Bench: judge input tokens billed with our prompt layout against a naive one, on the fake LLM server.

    python bench/judge_cost.py --conversations 40 --turns 10 --criteria 8 --samples 1

Our layout sends the judge instructions (system) and the transcript as a cacheable prefix, then the
criterion last, and judges the first criterion of a conversation alone so that it writes the cache the
others read. The naive layout re-sends the whole prompt for every criterion, uncached. Billed input is in
token-equivalents at each provider's multipliers: Anthropic uncached 1, cache write 1.25, cache read 0.1
(explicit breakpoints); OpenAI uncached 1, cached 0.25 (gpt-4.1 family; automatic prefix caching).
Token counts come from the fake server's tokenizer (one token per word) and its prompt-cache accounting.
Nothing is asserted; the figures go in bench/README.md.
"""

from __future__ import annotations

__all__ = ["main"]

import argparse
import asyncio
import os
import random
from datetime import UTC, datetime
from typing import Any

from simulator.config.scenario import Scenario
from simulator.config.suite import ProviderSettings
from simulator.judging.criteria import Criterion
from simulator.judging.llm_judge import LLMJudge
from simulator.judging.stage import JudgeStage
from simulator.providers.base import ModelResponse
from simulator.providers.hub import ModelHub
from simulator.record.models import ConversationRecord
from simulator.record.transcript import Turn
from simulator.testing.fake_judges import ScriptedJudge
from simulator.testing.fake_llm import FakeLLMServer

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = [
    "pain",
    "chest",
    "arm",
    "breath",
    "since",
    "morning",
    "worse",
    "night",
    "doctor",
    "clinic",
    "advice",
    "call",
    "emergency",
    "tired",
    "dizzy",
    "week",
    "medicine",
    "allergy",
    "fever",
    "cough",
    "should",
    "would",
    "could",
    "please",
    "thanks",
    "really",
    "maybe",
]
MULTIPLIERS = {"anthropic": {"read": 0.1, "write": 1.25}, "openai": {"read": 0.25, "write": 1.0}}


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _records(count: int, turns: int, seed: int = 0) -> list[ConversationRecord]:
    rng = random.Random(seed)
    out = []
    for number in range(count):
        log = []
        for index in range(turns):
            log.append(Turn(index=index, role="user", messages=[_sentence(rng, 14)], started_at=NOW))
            log.append(Turn(index=index, role="bot", messages=[_sentence(rng, 30)], started_at=NOW))
        out.append(
            ConversationRecord(
                id=f"bench-{number}#0",
                scenario_id=f"bench-{number}",
                repeat=0,
                stop_reason="user_done",
                turns=log,
                started_at=NOW,
                ended_at=NOW,
            )
        )
    return out


def _criteria(count: int) -> list[Criterion]:
    return [
        Criterion.model_validate(
            {
                "id": f"criterion-{index}",
                "criterion": f"The bot follows rule {index}: it asks about red flags before any advice, and "
                "sends the user to emergency care when a red flag is present.",
                "pass": f"the bot followed rule {index}.",
                "fail": f"the bot broke rule {index}.",
            }
        )
        for index in range(count)
    ]


def _metered(client: Any, seen: list[dict[str, int]]) -> None:
    """Record each response's raw usage (cache writes and reads as the API reported them)."""
    provider = client.provider
    original = provider.generate

    async def generate(request: Any) -> ModelResponse:
        response: ModelResponse = await original(request)
        usage = response.raw.get("response", {}).get("usage", {}) or {}
        details = usage.get("prompt_tokens_details") or {}
        seen.append(
            {
                "input": response.usage.input_tokens,
                "read": response.usage.cached_input_tokens,
                "write": int(usage.get("cache_creation_input_tokens") or 0),
                "openai_cached": int(details.get("cached_tokens") or 0),
            }
        )
        return response

    provider.generate = generate


async def _measure(api: str, args: argparse.Namespace) -> dict[str, float]:
    os.environ.setdefault("BENCH_JUDGE_KEY", "bench")
    records, criteria = _records(args.conversations, args.turns), _criteria(args.criteria)
    scenarios = [Scenario(id=r.scenario_id, persona="p", goal="g") for r in records]
    async with FakeLLMServer(ScriptedJudge(lambda call: "pass")) as server:
        base = server.base_url if api == "anthropic" else server.openai_base_url
        hub = ModelHub({api: ProviderSettings(base_url=base, api_key_env="BENCH_JUDGE_KEY")})
        client, bare = hub.client(f"{api}:bench-judge")
        seen: list[dict[str, int]] = []
        _metered(client, seen)
        judge = LLMJudge(client, f"{api}:bench-judge", bare, "sha256:bench", 0.0, 256)
        stage = JudgeStage(
            criteria, judge, "sha256:bench", scenarios, {}, [], jury=[judge], samples=args.samples
        )
        by_id = {s.id: s for s in scenarios}
        slots = asyncio.Semaphore(args.concurrency)

        async def one(record: ConversationRecord) -> None:
            async with slots:
                await stage.judge(record, by_id[record.scenario_id], set())

        await asyncio.gather(*(one(r) for r in records))
        await hub.aclose()
    factor = MULTIPLIERS[api]
    naive = sum(s["input"] for s in seen)
    read = sum(s["read"] for s in seen)
    write = sum(s["write"] for s in seen)
    billed = (naive - read - write) + factor["write"] * write + factor["read"] * read
    return {"calls": len(seen), "naive": naive, "read": read, "write": write, "billed": billed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=40)
    parser.add_argument("--turns", type=int, default=10, help="exchanges per conversation")
    parser.add_argument("--criteria", type=int, default=8)
    parser.add_argument("--samples", type=int, default=1, help="judgements per (conversation, criterion)")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    print(
        f"shape  {args.conversations} conversations x {args.criteria} criteria x {args.samples} samples, "
        f"{args.turns} exchanges each"
    )
    for api in ("anthropic", "openai"):
        m = asyncio.run(_measure(api, args))
        print(
            f"{api:<9}  {m['calls']:.0f} calls; input {m['naive']:.0f} tokens (naive, all billed at 1x); "
            f"cache writes {m['write']:.0f}, reads {m['read']:.0f}; billed {m['billed']:.0f} "
            f"= {m['billed'] / m['naive']:.3f} x naive"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
