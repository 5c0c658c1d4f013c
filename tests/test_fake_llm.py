"""The fake LLM server, exercised through the real anthropic and openai SDKs (never mocked)."""

from __future__ import annotations

import asyncio
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Literal

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel, Field

from simulator.testing import FakeCall, FakeLLMServer, FakeReply, FaultConfig, LatencyModel, minimal_instance

KEY = "test-key"
USER = [{"role": "user", "content": "my chest hurts since this afternoon"}]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def clients(fake: FakeLLMServer, **kwargs: float) -> tuple[anthropic.Anthropic, openai.OpenAI]:
    return (
        anthropic.Anthropic(api_key=KEY, base_url=fake.base_url, **kwargs),  # type: ignore[arg-type]
        openai.OpenAI(api_key=KEY, base_url=fake.openai_base_url, **kwargs),  # type: ignore[arg-type]
    )


class Level(StrEnum):
    self_care = "self_care"
    emergency = "emergency"


class Evidence(BaseModel):
    quote: str
    turn: int = Field(ge=1)


class Verdict(BaseModel):
    result: Literal["pass", "fail", "not_applicable"]
    level: Level
    reasoning: str
    evidence: list[Evidence]
    confidence: float | None
    follow_up: Evidence | None


# ------------------------------------------------------------------------------------------ plain text


def test_anthropic_text_usage_and_recorded_call(server: FakeLLMServer) -> None:
    client, _ = clients(server)
    message = client.messages.create(
        model="claude-fake",
        max_tokens=100,
        system="You are a triage nurse.",
        messages=USER,
        extra_body={"temperature": 0.3},  # anthropic 2.16 has no `temperature` keyword any more
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == "Fake reply to: my chest hurts since this afternoon"
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (5 + 6, 9)
    assert (message.usage.cache_read_input_tokens, message.usage.cache_creation_input_tokens) == (0, 0)
    assert message.model == "claude-fake"
    call = server.calls[0]
    assert (call.api, call.system, call.temperature, call.stream) == (
        "anthropic",
        "You are a triage nurse.",
        0.3,
        False,
    )
    assert call.messages[0].content == USER[0]["content"]
    assert KEY in (call.headers.get("x-api-key", "") + call.headers.get("authorization", ""))


async def test_openai_text_usage_async_server_and_client() -> None:
    async with FakeLLMServer(responder=lambda call: f"echo {call.messages[-1].content}") as fake:
        client = openai.AsyncOpenAI(api_key=KEY, base_url=fake.openai_base_url)
        completion = await client.chat.completions.create(
            model="gpt-fake",
            messages=[{"role": "system", "content": "Be brief."}, *USER],  # type: ignore[list-item]
        )
        await client.close()
    choice = completion.choices[0]
    assert choice.message.content == "echo my chest hurts since this afternoon"
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (2 + 6, 7)
    assert completion.usage.total_tokens == 15
    assert fake.calls[0].system == "Be brief."
    assert fake.calls[0].api == "openai"


async def test_async_responder_and_max_tokens_truncation(server: FakeLLMServer) -> None:
    async def responder(call: FakeCall) -> FakeReply:
        await asyncio.sleep(0)
        return FakeReply(text="one two three four five six")

    server.responder = responder
    client, oai = clients(server)
    message = client.messages.create(model="m", max_tokens=4, messages=USER)
    assert message.content[0].text == "one two three four"  # type: ignore[union-attr]
    assert message.stop_reason == "max_tokens"
    completion = oai.chat.completions.create(model="m", max_completion_tokens=2, messages=USER)  # type: ignore[arg-type]
    assert completion.choices[0].message.content == "one two"
    assert completion.choices[0].finish_reason == "length"


# ------------------------------------------------------------------------------------------ tools

TOOL_ANTHROPIC = {
    "name": "set_triage",
    "description": "Record the triage level.",
    "input_schema": {
        "type": "object",
        "properties": {"level": {"enum": ["gp", "emergency"]}},
        "required": ["level"],
    },
}


def test_anthropic_tool_use(server: FakeLLMServer) -> None:
    server.responder = lambda call: FakeReply(
        text="Calling.", tool_call=("set_triage", {"level": "emergency"})
    )
    client, _ = clients(server)
    message = client.messages.create(model="m", max_tokens=50, messages=USER, tools=[TOOL_ANTHROPIC])  # type: ignore[list-item]
    assert [block.type for block in message.content] == ["text", "tool_use"]
    tool = message.content[1]
    assert tool.type == "tool_use"
    assert (tool.name, tool.input) == ("set_triage", {"level": "emergency"})
    assert tool.id.startswith("toolu_")
    assert message.stop_reason == "tool_use"
    assert server.calls[0].tools == [
        {
            "name": "set_triage",
            "description": "Record the triage level.",
            "parameters": TOOL_ANTHROPIC["input_schema"],
        }
    ]


def test_openai_tool_calls(server: FakeLLMServer) -> None:
    server.responder = lambda call: FakeReply(tool_call=("set_triage", {"level": "gp", "notes": ["a b"]}))
    _, client = clients(server)
    tool = {
        "type": "function",
        "function": {"name": "set_triage", "parameters": TOOL_ANTHROPIC["input_schema"]},
    }
    completion = client.chat.completions.create(model="m", messages=USER, tools=[tool])  # type: ignore[list-item,arg-type]
    message = completion.choices[0].message
    assert message.content is None
    assert message.tool_calls is not None and len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "set_triage"
    assert json.loads(call.function.arguments) == {"level": "gp", "notes": ["a b"]}
    assert completion.choices[0].finish_reason == "tool_calls"
    assert server.calls[0].tools[0]["name"] == "set_triage"


def test_default_responder_answers_a_forced_tool(server: FakeLLMServer) -> None:
    client, oai = clients(server)
    message = client.messages.create(
        model="m", max_tokens=50, messages=USER, tools=[TOOL_ANTHROPIC],  # type: ignore[list-item]
        tool_choice={"type": "tool", "name": "set_triage"},
    )  # fmt: skip
    assert [(b.type, getattr(b, "input", None)) for b in message.content] == [("tool_use", {"level": "gp"})]
    tool = {
        "type": "function",
        "function": {"name": "set_triage", "parameters": TOOL_ANTHROPIC["input_schema"]},
    }
    completion = oai.chat.completions.create(model="m", messages=USER, tools=[tool], tool_choice="required")  # type: ignore[list-item,arg-type]
    assert completion.choices[0].message.tool_calls[0].function.arguments == '{"level": "gp"}'  # type: ignore[index,union-attr]


# ------------------------------------------------------------------------------------------ schemas


def test_minimal_instance_handles_refs_unions_and_bounds() -> None:
    schema = Verdict.model_json_schema()
    assert Verdict.model_validate(minimal_instance(schema)).result == "pass"
    bounded = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 3}, "s": {"type": "string", "minLength": 2},
        "xs": {"type": "array", "items": {"type": ["null", "boolean"]}, "minItems": 2},
        "c": {"const": 7}, "maybe": {"anyOf": [{"type": "null"}, {"type": "number"}]},
    }}  # fmt: skip
    assert minimal_instance(bounded) == {"n": 3, "s": "xx", "xs": [False, False], "c": 7, "maybe": 0}


def test_anthropic_structured_output_parses(server: FakeLLMServer) -> None:
    client, _ = clients(server)
    parsed = client.messages.parse(model="m", max_tokens=200, messages=USER, output_format=Verdict)
    assert isinstance(parsed.parsed_output, Verdict)
    assert parsed.parsed_output.level is Level.self_care
    # the SDK moves `minimum` into the description ("{minimum: 1}"); the fake reads it back from there
    assert parsed.parsed_output.follow_up == Evidence(quote="", turn=1)
    sent = server.calls[0].body["output_config"]["format"]
    assert sent["type"] == "json_schema" and '"minimum"' not in json.dumps(sent["schema"])
    assert server.calls[0].schema == sent["schema"]


def test_openai_structured_output_parses(server: FakeLLMServer) -> None:
    _, client = clients(server)
    completion = client.chat.completions.parse(model="m", messages=USER, response_format=Verdict)  # type: ignore[arg-type]
    verdict = completion.choices[0].message.parsed
    assert isinstance(verdict, Verdict)
    assert (verdict.result, verdict.evidence, verdict.follow_up) == ("pass", [], Evidence(quote="", turn=1))
    assert server.calls[0].schema is not None and "$defs" in server.calls[0].schema


def test_refuse_json_schema_like_llama_cpp() -> None:
    with FakeLLMServer(refuse_json_schema=True) as fake:
        _, client = clients(fake, max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.parse(model="m", messages=USER, response_format=Verdict)  # type: ignore[arg-type]
        assert 'must be one of "text" or "json_object"' in str(caught.value)
        schema = {
            "type": "object",
            "properties": {"level": {"enum": ["gp", "emergency"]}},
            "required": ["level"],
        }
        completion = client.chat.completions.create(
            model="m",
            messages=USER,
            response_format={"type": "json_object", "schema": schema},  # type: ignore[arg-type,typeddict-unknown-key]
        )
        assert json.loads(completion.choices[0].message.content or "") == {"level": "gp"}
        plain = client.chat.completions.create(
            model="m", messages=USER, response_format={"type": "json_object"}
        )  # type: ignore[arg-type]
        assert json.loads(plain.choices[0].message.content or "") == {}


# ------------------------------------------------------------------------------------------ prompt caching


def test_anthropic_cache_control_prefix_is_read_back(server: FakeLLMServer) -> None:
    client, _ = clients(server)
    system = [
        {
            "type": "text",
            "text": "You are a careful triage nurse " * 5,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    first = client.messages.create(model="m", max_tokens=20, system=system, messages=USER)  # type: ignore[arg-type]
    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (30, 0)
    assert first.usage.input_tokens == 6
    other = [{"role": "user", "content": "a different question"}]
    second = client.messages.create(model="m", max_tokens=20, system=system, messages=other)  # type: ignore[arg-type]
    assert (second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens) == (0, 30)
    assert second.usage.input_tokens == 3
    uncached = client.messages.create(
        model="m", max_tokens=20, system="You are a careful triage nurse " * 5, messages=other
    )
    assert (uncached.usage.cache_read_input_tokens, uncached.usage.input_tokens) == (0, 33)
    other_model = client.messages.create(model="m2", max_tokens=20, system=system, messages=other)  # type: ignore[arg-type]
    assert other_model.usage.cache_read_input_tokens == 0


def test_anthropic_growing_conversation_reads_previous_breakpoint(server: FakeLLMServer) -> None:
    client, _ = clients(server)
    mark = {"type": "ephemeral"}
    turn1 = [{"role": "user", "content": [{"type": "text", "text": "one two three", "cache_control": mark}]}]
    client.messages.create(model="m", max_tokens=9, system="sys tem", messages=turn1)  # type: ignore[arg-type]
    turn2 = [
        {"role": "user", "content": "one two three"},
        {"role": "assistant", "content": "four five"},
        {"role": "user", "content": "six"},
    ]
    second = client.messages.create(
        model="m", max_tokens=9, system="sys tem", messages=turn2, cache_control=mark
    )  # type: ignore[arg-type,call-arg]
    assert (second.usage.cache_read_input_tokens, second.usage.cache_creation_input_tokens) == (5, 3)
    assert second.usage.input_tokens == 0


def test_openai_repeated_prefix_reports_cached_tokens(server: FakeLLMServer) -> None:
    _, client = clients(server)
    history = [{"role": "system", "content": "judge this transcript carefully"}, *USER]
    first = client.chat.completions.create(model="m", messages=history)  # type: ignore[arg-type]
    assert first.usage and first.usage.prompt_tokens_details
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    longer = [*history, {"role": "assistant", "content": "ok then"}, {"role": "user", "content": "go on"}]
    second = client.chat.completions.create(model="m", messages=longer)  # type: ignore[arg-type]
    assert second.usage and second.usage.prompt_tokens_details
    assert (second.usage.prompt_tokens, second.usage.prompt_tokens_details.cached_tokens) == (14, 10)


# ------------------------------------------------------------------------------------------ faults


def test_rate_limit_with_retry_after_then_sdk_retry_succeeds() -> None:
    faults = FaultConfig(fail_first_n=2, fail_first_kind="error_429", retry_after_s=0.1)
    with FakeLLMServer(faults=faults) as fake:
        client, oai = clients(fake, max_retries=0)
        with pytest.raises(anthropic.RateLimitError) as caught:
            client.messages.create(model="m", max_tokens=5, messages=USER)
        assert caught.value.response.headers["retry-after"] == "0.1"
        assert caught.value.body == {
            "type": "error",
            "error": {"type": "rate_limit_error", "message": caught.value.body["error"]["message"]},  # type: ignore[index]
        }
        with pytest.raises(openai.RateLimitError) as caught_oai:
            oai.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert caught_oai.value.code == "rate_limit_exceeded"
        assert caught_oai.value.response.headers["retry-after"] == "0.1"
        fake.faults = FaultConfig(fail_first_n=4, retry_after_s=0.05)  # calls 2 and 3 fail, the SDK retries
        retrying = anthropic.Anthropic(api_key=KEY, base_url=fake.base_url, max_retries=2)
        assert retrying.messages.create(model="m", max_tokens=50, messages=USER).stop_reason == "end_turn"
        assert len(fake.calls) == 5


def test_internal_server_error_both_apis() -> None:
    with FakeLLMServer(faults=FaultConfig(error_500=1.0)) as fake:
        client, oai = clients(fake, max_retries=0)
        with pytest.raises(anthropic.InternalServerError) as caught:
            client.messages.create(model="m", max_tokens=5, messages=USER)
        assert caught.value.body["error"]["type"] == "api_error"  # type: ignore[index]
        with pytest.raises(openai.InternalServerError) as caught_oai:
            oai.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert caught_oai.value.type == "server_error"


def test_responder_error_reply_uses_each_api_format(server: FakeLLMServer) -> None:
    server.responder = lambda call: FakeReply(status=529, text="Overloaded")
    client, oai = clients(server, max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="m", max_tokens=5, messages=USER)
    assert (caught.value.status_code, caught.value.body) == (
        529,
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    with pytest.raises(openai.InternalServerError):
        oai.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]


def test_malformed_body_makes_the_sdks_raise() -> None:
    with FakeLLMServer(faults=FaultConfig(malformed=1.0)) as fake:
        client, oai = clients(fake, max_retries=0)
        with pytest.raises(json.JSONDecodeError):
            client.messages.create(model="m", max_tokens=5, messages=USER)
        with pytest.raises(json.JSONDecodeError):
            oai.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        with pytest.raises(json.JSONDecodeError):
            list(oai.chat.completions.create(model="m", messages=USER, stream=True))  # type: ignore[arg-type]


def test_timeout_share_trips_the_client_timeout() -> None:
    with FakeLLMServer(faults=FaultConfig(timeout=1.0, timeout_s=5.0)) as fake:
        client, oai = clients(fake, max_retries=0, timeout=0.3)
        with pytest.raises(anthropic.APITimeoutError):
            client.messages.create(model="m", max_tokens=5, messages=USER)
        with pytest.raises(openai.APITimeoutError):
            oai.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]


def test_fault_draws_are_seeded_and_shared_by_both_apis() -> None:
    faults = FaultConfig(error_500=0.3, error_429=0.2, retry_after_s=None)
    rng = random.Random(7)
    expected = [faults.pick(i, rng) for i in range(16)]
    assert {None, "error_500", "error_429"} == set(expected)
    with FakeLLMServer(faults=faults, seed=7) as fake:
        client, oai = clients(fake, max_retries=0)
        seen: list[str | None] = []
        for i in range(16):
            try:
                if i % 2:
                    oai.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
                else:
                    client.messages.create(model="m", max_tokens=5, messages=USER)
                seen.append(None)
            except (anthropic.RateLimitError, openai.RateLimitError):
                seen.append("error_429")
            except (anthropic.InternalServerError, openai.InternalServerError):
                seen.append("error_500")
    assert seen == expected


def test_latency_models_are_seeded_and_bounded() -> None:
    uniform = LatencyModel.uniform(0.08, 0.12)
    draws = [uniform.sample(random.Random(3)) for _ in range(3)]
    assert len(set(draws)) == 1 and 0.08 <= draws[0] <= 0.12
    lognormal = LatencyModel.lognormal(0.1, 0.5)
    values = sorted(lognormal.sample(random.Random(i)) for i in range(401))
    assert 0.08 < values[200] < 0.125  # the sample median sits near the configured median
    assert LatencyModel.fixed(0.2).sample(random.Random(0)) == 0.2
    with pytest.raises(ValueError):
        LatencyModel.uniform(0.2, 0.1)
    with pytest.raises(ValueError):
        FaultConfig(error_500=0.7, error_429=0.5)


# ------------------------------------------------------------------------------------------ streaming


async def test_anthropic_streaming_text_and_tool_use() -> None:
    async with FakeLLMServer(tokens_per_second=2000) as fake:
        client = anthropic.AsyncAnthropic(api_key=KEY, base_url=fake.base_url)
        async with client.messages.stream(model="m", max_tokens=50, messages=USER) as stream:
            pieces = [text async for text in stream.text_stream]
            final = await stream.get_final_message()
        assert len(pieces) == 9
        assert "".join(pieces) == "Fake reply to: my chest hurts since this afternoon"
        assert (final.usage.input_tokens, final.usage.output_tokens, final.stop_reason) == (6, 9, "end_turn")
        fake.responder = lambda call: FakeReply(tool_call=("set_triage", {"level": "emergency"}))
        async with client.messages.stream(model="m", max_tokens=50, messages=USER) as stream:
            final = await stream.get_final_message()
        assert [(b.type, getattr(b, "input", None)) for b in final.content] == [
            ("tool_use", {"level": "emergency"})
        ]
        assert final.stop_reason == "tool_use"
        assert fake.calls[0].stream
        await client.close()


def test_openai_streaming_text_usage_and_tool_calls(server: FakeLLMServer) -> None:
    _, client = clients(server)
    chunks = list(
        client.chat.completions.create(
            model="m",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Fake reply to: my chest hurts since this afternoon"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (6, 9)
    server.responder = lambda call: FakeReply(tool_call=("set_triage", {"level": "gp"}))
    with client.chat.completions.stream(model="m", messages=USER) as stream:  # type: ignore[arg-type]
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert (call.function.name, json.loads(call.function.arguments)) == ("set_triage", {"level": "gp"})
    assert final.choices[0].finish_reason == "tool_calls"


TRICKY = ['He said "stop" \\ twice', "naïve café 中文 😀", "lone \ud800 half", "\x00piece\x00 inside", ""]


@pytest.mark.parametrize("model", ["m", "\x00piece\x00"])  # the second: a frame that holds the marker
def test_streamed_text_events_are_what_json_dumps_makes_of_each(model: str) -> None:
    """Each text piece's event, made from one frame, is byte for byte the event encoded on its own."""
    from simulator.testing.fake_llm_formats import (
        TokenUsage,
        _pieces,
        anthropic_message,
        anthropic_sse,
        openai_completion,
        openai_sse,
    )

    def anthropic_event(piece: str) -> bytes:
        delta = {"type": "text_delta", "text": piece}
        event = {"type": "content_block_delta", "index": 0, "delta": delta}
        return f"event: content_block_delta\ndata: {json.dumps(event)}\n\n".encode()

    def openai_event(frame: dict[str, object], piece: str) -> bytes:
        choice = {"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}
        return f"data: {json.dumps({**frame, 'choices': [choice]})}\n\n".encode()

    for text in TRICKY:
        usage = TokenUsage(3, 4)
        message = anthropic_message(
            message_id="msg_x", model=model, text=text, tool_calls=[], usage=usage, stop_reason="end_turn"
        )
        deltas = [chunk for chunk, tokens in anthropic_sse(message) if tokens]
        assert deltas == [anthropic_event(piece) for piece in _pieces(text)]
        completion = openai_completion(
            completion_id="chatcmpl-x",
            model=model,
            text=text,
            tool_calls=[],
            usage=usage,
            finish_reason="stop",
        )
        frame = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
        frame["object"] = "chat.completion.chunk"
        chunks = [chunk for chunk, tokens in openai_sse(completion, include_usage=False) if tokens]
        assert chunks == [openai_event(frame, piece) for piece in _pieces(text)]


def test_a_stream_not_paced_sends_the_bytes_a_paced_one_sends() -> None:
    """Without --tps the events go out in one write; the body is the one the paced stream sends event by
    event, tool calls and all (Anthropic's stream has no clock in it)."""
    bodies = []
    for tps in (None, 1e6):
        with FakeLLMServer(tokens_per_second=tps) as fake:
            fake.responder = lambda call: FakeReply(
                text="two words", tool_call=("set_triage", {"level": "gp"})
            )
            answer = httpx.post(
                f"{fake.base_url}/v1/messages",
                json={"model": "m", "max_tokens": 50, "messages": USER, "stream": True},
                headers={"x-api-key": KEY},
            )
        assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
        bodies.append(answer.content)
    assert bodies[0] == bodies[1]
    assert bodies[0].count(b"event: content_block_delta") == 4  # two words, two halves of the arguments


async def test_many_concurrent_requests_all_answered() -> None:
    async with FakeLLMServer(latency=LatencyModel.uniform(0.01, 0.05), seed=1) as fake:
        client = openai.AsyncOpenAI(api_key=KEY, base_url=fake.openai_base_url)
        prompts = [[{"role": "user", "content": f"question number {i}"}] for i in range(60)]
        results = await asyncio.gather(
            *(client.chat.completions.create(model="m", messages=p) for p in prompts)
        )  # type: ignore[arg-type]
        await client.close()
    assert [r.choices[0].message.content for r in results] == [
        f"Fake reply to: question number {i}" for i in range(60)
    ]
    assert len(fake.calls) == 60


# ------------------------------------------------------------------------------------------ log, auth, CLI


def test_request_log_has_header_names_never_values(tmp_path: Path) -> None:
    secret = "sk-fake-SECRET-0123456789"
    log = tmp_path / "requests.jsonl"
    with FakeLLMServer(request_log=log, faults=FaultConfig(fail_first_n=1)) as fake:
        anthropic.Anthropic(api_key=secret, base_url=fake.base_url, max_retries=1).messages.create(
            model="m", max_tokens=5, messages=USER
        )
        openai.OpenAI(api_key=secret, base_url=fake.openai_base_url).chat.completions.create(
            model="m", messages=USER
        )  # type: ignore[arg-type]
    text = log.read_text()
    assert secret not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [(line["api"], line["outcome"], line["status"]) for line in lines] == [
        ("anthropic", "error_429", 429),
        ("anthropic", "ok", 200),
        ("openai", "ok", 200),
    ]
    assert "authorization" in lines[2]["header_names"]
    assert lines[2]["body"]["messages"] == USER


def test_missing_key_and_bad_request_get_api_shaped_errors(server: FakeLLMServer) -> None:
    no_key = httpx.post(
        f"{server.base_url}/v1/messages", json={"model": "m", "max_tokens": 5, "messages": USER}
    )
    assert no_key.status_code == 401
    assert no_key.json()["error"]["type"] == "authentication_error"
    bad = httpx.post(
        f"{server.openai_base_url}/chat/completions",
        json={"messages": USER},
        headers={"authorization": "Bearer k"},
    )
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    assert server.calls == []


def test_cli_help_and_serving_one_request(tmp_path: Path) -> None:
    helped = subprocess.run(
        [sys.executable, "-m", "simulator.testing.fake_server", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--refuse-json-schema" in helped.stdout and "--timeout-share" in helped.stdout
    log = tmp_path / "cli.jsonl"
    command = [sys.executable, "-m", "simulator.testing.fake_server", "--port", "0", "--latency-ms", "5"]
    process = subprocess.Popen([*command, "--log", str(log)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        match = re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline())
        assert match, "the CLI did not print its URL"
        client = openai.OpenAI(api_key=KEY, base_url=match.group(0) + "/v1", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert reply.choices[0].message.content == "Fake reply to: my chest hurts since this afternoon"
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "stopped after 1 requests" in out
    assert json.loads(log.read_text())["outcome"] == "ok"
