"""End to end with a real small model (SmolLM2-135M): through llama.cpp's OpenAI-compatible server and the
real openai SDK, and in process with local:smollm2. Assert on the engine, not on the model's wisdom."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.config.bots import ChatBotConfig
from simulator.config.suite import ProviderSettings, Suite, load_suite
from simulator.engine.runner import RunOptions, RunResult, run_suite
from simulator.providers.base import ChatMessage, ModelRequest
from simulator.providers.hub import ModelClient
from simulator.providers.local import resolve_model_path
from simulator.providers.openai import OpenAIProvider
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord, Verdict
from simulator.text.character import character_break_reason

pytestmark = pytest.mark.real_llm

SMOKE = Path(__file__).resolve().parent.parent / "scenarios" / "smoke" / "suite.yaml"
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "enum": ["pass", "fail", "not_applicable"]},
        "reasoning": {"type": "string", "maxLength": 120},
    },
    "required": ["result", "reasoning"],
}


# Kept short, so the real-model tests take minutes on a busy 2-core machine, not half an hour: llama.cpp's
# prompt processing dominates (about 100 tokens a second there). One repeat, two user turns, and each path
# (server, in process) plays one of the two smoke scenarios; the simulated user's audit (the longest
# prompt) has its own real-model test (test_fidelity_real_llm.py).
SMOKE_RUNS = 1
SMOKE_TURNS = 2


def smoke_suite(provider: str, base_url: str | None = None) -> Suite:
    """The smoke suite with every model role moved to `provider` (and the server's dynamic port), short."""
    data = yaml.safe_load(SMOKE.read_text(encoding="utf-8"))
    # One conversation at a time: the model answers one call at a time anyway, and consecutive calls of one
    # conversation share their prompt's start, which llama.cpp then reads from its cache instead of again.
    overrides: dict[str, Any] = {"runs": SMOKE_RUNS, "concurrency": 1}
    for role in ("user", "bot", "judges"):
        if role in data and str(data[role].get("model", "")).startswith("local:"):
            overrides[role] = {**data[role], "model": data[role]["model"].replace("local:", f"{provider}:")}
    user = overrides.setdefault("user", dict(data.get("user", {})))
    user["fidelity"] = {**user.get("fidelity", {}), "enabled": False}
    if base_url is not None:
        overrides["providers"] = {"openai": {"base_url": base_url, "timeout_s": 120, "max_attempts": 2}}
    return load_suite(SMOKE, overrides)


async def run_smoke(
    suite: Suite, out: Path, scenario_id: str
) -> tuple[RunResult, list[ConversationRecord], list[Verdict]]:
    scenarios = suite.scenarios_to_run(ids={scenario_id})
    for scenario in scenarios:
        scenario.max_turns = SMOKE_TURNS
    result = await run_suite(suite, scenarios, RunOptions(out=out, progress=False))
    folder = RunFolder.open(out)
    return result, list(folder.conversations()), list(folder.verdicts())


def check_engine_behaviour(
    suite: Suite,
    result: RunResult,
    records: list[ConversationRecord],
    verdicts: list[Verdict],
    out: Path,
    scenario_id: str,
) -> None:
    """What must hold whatever the model says: stop reasons, usage, latency, breaks, verdicts, no crash."""
    assert result.status == "complete"
    assert sorted(r.id for r in records) == [f"{scenario_id}#{repeat}" for repeat in range(SMOKE_RUNS)]
    manifest = RunFolder.open(out).read_manifest()
    assert manifest.status == "complete"
    assert sum(manifest.counts.stop_reasons.values()) == SMOKE_RUNS
    max_breaks = suite.user.max_character_breaks
    for record in records:
        assert record.stop_reason in {"user_done", "handover", "bot_closed", "max_turns", "error"}
        assert (record.stop_reason == "error") == (record.error is not None)
        assert record.error is None or record.error.source != "engine", record.error  # nothing crashed
        # Character breaks are detected, counted and never left in the transcript.
        assert all(reason for reason in record.character_breaks)
        if record.error is not None and record.error.kind == "character_break":
            assert len(record.character_breaks) == max_breaks + 1 and record.turns == []
        else:
            assert len(record.character_breaks) <= max_breaks
        for turn in record.turns:
            assert turn.usage is not None and turn.usage.calls == 1
            assert turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0
            assert turn.latency_s > 0
            assert turn.raw is not None  # the raw exchange is kept next to the turn
            if turn.role == "user":
                assert character_break_reason(turn.text) is None
        roles = [t.role for t in record.turns]
        assert roles == ["user", "bot"] * (len(roles) // 2) + (["user"] if len(roles) % 2 else [])
        scenario_turns = SMOKE_TURNS
        assert len([r for r in roles if r == "user"]) <= scenario_turns
        if record.stop_reason == "max_turns":
            assert len(roles) == 2 * scenario_turns
        for role in ("user", "bot"):
            turns = [t for t in record.turns if t.role == role]
            if turns:
                recorded = record.usage_by_role[role]
                assert recorded.calls == len(turns)
                assert recorded.output_tokens == sum(t.usage.output_tokens for t in turns if t.usage)
    # The simulated user's fidelity checks are their own kind (audited once per conversation): each is a
    # valid result or an error, never counted with the bot's criteria below.
    fidelity = [v for v in verdicts if v.kind == "fidelity"]
    assert all(v.result in {"pass", "fail", "not_applicable", "error", "not_judged"} for v in fidelity)
    verdicts = [v for v in verdicts if v.kind != "fidelity"]
    # One LLM verdict per (conversation, criterion): a valid result, or an error recorded as an error.
    by_id = {r.id: r for r in records}
    criteria = {"smoke-asks-for-details", "smoke-stays-on-topic"}
    assert sorted((v.conversation_id, v.criterion_id) for v in verdicts) == sorted(
        (r.id, c) for r in records for c in criteria
    )
    for verdict in verdicts:
        record = by_id[verdict.conversation_id]
        assert verdict.kind == "llm"
        assert verdict.judge_set_hash
        if record.stop_reason == "error":
            assert verdict.result == "not_judged" and "ended in an error" in verdict.reasoning
            continue
        assert verdict.result in {"pass", "fail", "not_applicable", "error"}
        assert verdict.judge_model == suite.judges.model
        if verdict.result == "error":
            assert verdict.error is not None and verdict.error.source == "judge"
            if verdict.error.kind != "invalid_output":
                continue  # the provider failed: nothing was answered, so there is no usage to record
            assert verdict.usage is not None and verdict.usage.calls == 2  # after one corrective retry
        else:
            assert verdict.error is None and verdict.evidence_verified is not None
        assert verdict.usage is not None and verdict.usage.calls in (1, 2)
        assert verdict.usage.input_tokens > 0 and verdict.usage.output_tokens > 0
        assert verdict.latency_s is not None and verdict.latency_s > 0


async def test_smoke_suite_through_the_llama_cpp_server(llama_server: Any, tmp_path: Path) -> None:
    suite = smoke_suite("openai", llama_server.base_url)
    result, records, verdicts = await run_smoke(suite, tmp_path / "run", "smoke-late-parcel")
    check_engine_behaviour(suite, result, records, verdicts, tmp_path / "run", "smoke-late-parcel")
    models = {t.model for r in records for t in r.turns}
    assert models <= {"smollm2"}  # the server's alias, read back from its responses
    raw_requests = [t.raw["request"] for r in records for t in r.turns if t.raw]
    assert isinstance(suite.bot, ChatBotConfig)
    assert all(req["max_tokens"] in (suite.user.max_tokens, suite.bot.max_tokens) for req in raw_requests)


async def test_smoke_suite_in_process(tmp_path: Path) -> None:
    suite = smoke_suite("local")
    result, records, verdicts = await run_smoke(suite, tmp_path / "run", "smoke-password-reset")
    check_engine_behaviour(suite, result, records, verdicts, tmp_path / "run", "smoke-password-reset")
    files = {t.raw["model_file"] for r in records for t in r.turns if t.raw}
    assert files == {str(resolve_model_path("smollm2"))}


async def test_in_process_calls_reuse_the_shared_prompt_prefix() -> None:
    """Judges of one conversation share instructions and transcript: llama.cpp keeps them in its KV cache,
    and the usage says how much of the prompt came from it."""
    from simulator.providers.local import LocalProvider

    provider = LocalProvider(ProviderSettings())
    transcript = ChatMessage(role="user", content="USER: where is my parcel?\nBOT: What is the order number?")
    usages = []
    for question in ("Did the bot ask for the order number?", "Was the bot polite?"):
        request = ModelRequest(
            model="smollm2",
            system="You judge support chats.",
            messages=[transcript, ChatMessage(role="user", content=question)],
            max_tokens=40,
            temperature=0.0,
            output_schema=VERDICT_SCHEMA,
        )
        response = await provider.generate(request)
        assert response.parsed is not None and response.parsed["result"] in {"pass", "fail", "not_applicable"}
        usages.append(response.usage)
    assert usages[1].cached_input_tokens > 0
    assert usages[1].cached_input_tokens < usages[1].input_tokens


async def test_structured_output_degrades_once_per_server(llama_server: Any) -> None:
    """llama-cpp-python's server answers json_schema with a 500; the provider falls back to json_object
    with the schema (which the server enforces as a grammar), without retrying, and remembers it."""
    url = llama_server.base_url
    OpenAIProvider.schema_modes.pop(url, None)
    settings = ProviderSettings(base_url=url, max_attempts=3)
    client = ModelClient(OpenAIProvider(settings), settings)
    request = ModelRequest(
        model="smollm2",
        system="You judge whether a support bot greeted the customer.",
        messages=[ChatMessage(role="user", content="BOT: Hello! How can I help?")],
        max_tokens=80,
        temperature=0.0,
        output_schema=VERDICT_SCHEMA,
    )
    refusals_before = llama_server.log_text().count('"POST /v1/chat/completions HTTP/1.1" 500')
    first = await client.generate(request)
    second = await client.generate(request)
    refusals = llama_server.log_text().count('"POST /v1/chat/completions HTTP/1.1" 500') - refusals_before
    assert refusals == 1  # refused once, not retried, and not tried again on the second call
    assert client.retries == 0
    assert OpenAIProvider.schema_modes[url] == "json_object"
    for response in (first, second):
        assert response.raw["schema_mode"] == "json_object"
        assert response.raw["request"]["response_format"] == {"type": "json_object", "schema": VERDICT_SCHEMA}
        assert response.parsed is not None  # the grammar makes the JSON valid and on-schema
        assert response.parsed["result"] in {"pass", "fail", "not_applicable"}
        assert isinstance(response.parsed["reasoning"], str)
        assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
        assert response.latency_s > 0
